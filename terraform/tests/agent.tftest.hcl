# The agent function is optional (create_agent_function): by default (null) it exists exactly when an
# Anthropic API key secret is set, since without one it could answer nothing; true or false decides
# regardless, true without a secret with a warning (check agent_has_an_api_key). Without it nothing
# of it exists: no function, role, policy or log group, no place among the key users or the log groups
# the key serves, and its outputs are null. Runs use `apply` where the key policy names the roles.

mock_provider "aws" {
  source = "./tests/mocks"
}

variables {
  bucket_name     = "s3memory-test-bucket"
  lambda_zip_path = "tests/fixtures/lambda.zip"
}

run "no_agent_function_without_a_secret" {
  command = apply

  assert {
    condition = (
      !contains(keys(aws_lambda_function.this), "agent") &&
      !contains(keys(aws_iam_role.this), "agent") &&
      !contains(keys(aws_iam_role_policy.this), "agent") &&
      !contains(keys(aws_cloudwatch_log_group.this), "agent")
    )
    error_message = "Without anthropic_api_key_secret_arn (and create_agent_function unset) nothing of the agent function exists."
  }

  assert {
    condition = (
      output.agent_function_name == null && output.agent_function_arn == null &&
      output.agent_role_arn == null && output.log_group_names.agent == null &&
      output.memory_function_name == "s3memory-memory"
    )
    error_message = "The agent outputs are null without the function; the memory function is there."
  }

  assert {
    condition = [
      for statement in jsondecode(aws_kms_key.memory[0].policy).Statement : statement.Principal.AWS
      if statement.Sid == "EnvelopeKeysWithS3memoryContext"
    ] == [["arn:aws:iam::123456789012:role/s3memory-memory-lambda"]]
    error_message = "Without the agent function the memory role is the only key user."
  }

  assert {
    condition = [
      for statement in jsondecode(aws_kms_key.memory[0].policy).Statement : statement.Condition.ArnEquals["kms:EncryptionContext:aws:logs:arn"]
      if statement.Sid == "CloudWatchLogsForModuleLogGroups"
    ] == [["arn:aws:logs:eu-west-1:123456789012:log-group:/aws/lambda/s3memory-memory"]]
    error_message = "Without the agent function CloudWatch Logs may use the key for the memory function's log group only."
  }
}

run "created_with_a_secret" {
  command = apply

  variables {
    anthropic_api_key_secret_arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:anthropic-api-key-AbCdEf"
  }

  assert {
    condition = (
      contains(keys(aws_lambda_function.this), "agent") &&
      aws_lambda_function.this["agent"].function_name == "s3memory-agent" &&
      aws_lambda_function.this["agent"].role == aws_iam_role.this["agent"].arn &&
      aws_lambda_function.this["agent"].environment[0].variables["ANTHROPIC_API_KEY_SECRET_ARN"] == "arn:aws:secretsmanager:eu-west-1:123456789012:secret:anthropic-api-key-AbCdEf" &&
      aws_cloudwatch_log_group.this["agent"].name == "/aws/lambda/s3memory-agent"
    )
    error_message = "With a secret (create_agent_function unset) the agent function, its role and log group exist."
  }

  assert {
    condition = (
      output.agent_function_name == "s3memory-agent" &&
      output.agent_function_arn == "arn:aws:lambda:eu-west-1:123456789012:function:s3memory-agent" &&
      output.agent_role_arn == "arn:aws:iam::123456789012:role/s3memory-agent-lambda" &&
      output.log_group_names.agent == "/aws/lambda/s3memory-agent"
    )
    error_message = "The agent outputs name the function, its role and its log group."
  }

  assert {
    condition = [
      for statement in jsondecode(aws_kms_key.memory[0].policy).Statement : toset(statement.Principal.AWS)
      if statement.Sid == "EnvelopeKeysWithS3memoryContext"
    ] == [toset(["arn:aws:iam::123456789012:role/s3memory-memory-lambda", "arn:aws:iam::123456789012:role/s3memory-agent-lambda"])]
    error_message = "With the agent function its role is a key user beside the memory role."
  }
}

run "off_even_with_a_secret" {
  command = apply

  variables {
    create_agent_function        = false
    anthropic_api_key_secret_arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:anthropic-api-key-AbCdEf"
  }

  assert {
    condition = (
      !contains(keys(aws_lambda_function.this), "agent") && !contains(keys(aws_iam_role.this), "agent") &&
      !contains(keys(aws_iam_role_policy.this), "agent") && !contains(keys(aws_cloudwatch_log_group.this), "agent") &&
      output.agent_function_arn == null
    )
    error_message = "create_agent_function = false creates nothing of the agent function, secret or not."
  }

  assert {
    condition     = !strcontains(aws_iam_role_policy.this["memory"].policy, "secretsmanager") && !strcontains(aws_kms_key.memory[0].policy, "agent")
    error_message = "Without the agent function no role may read the secret and the key policy names no agent."
  }
}

run "on_without_a_secret_warns" {
  command = plan

  variables {
    create_agent_function = true
  }

  # The check fails (a warning in plan and apply; a failure here unless expected).
  expect_failures = [check.agent_has_an_api_key]

  assert {
    condition = (
      contains(keys(aws_lambda_function.this), "agent") &&
      !contains(keys(aws_lambda_function.this["agent"].environment[0].variables), "ANTHROPIC_API_KEY_SECRET_ARN") &&
      !strcontains(aws_iam_role_policy.this["agent"].policy, "secretsmanager")
    )
    error_message = "create_agent_function = true creates the function even without a secret (and grants no secret)."
  }
}
