# Optional settings change exactly what they should.

mock_provider "aws" {
  source = "./tests/mocks"
}

variables {
  bucket_name     = "s3memory-test-bucket"
  lambda_zip_path = "tests/fixtures/lambda.zip"
  # The agent function exists by default only with an Anthropic API key secret (agent.tftest.hcl);
  # these runs examine it too.
  anthropic_api_key_secret_arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:anthropic-api-key-AbCdEf"
}

run "secret_grants_agent_only" {
  command = apply

  variables {
    anthropic_api_key_secret_arn         = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:anthropic-api-key-AbCdEf"
    anthropic_api_key_secret_kms_key_arn = "arn:aws:kms:eu-west-1:123456789012:key/99999999-8888-7777-6666-555555555555"
  }

  assert {
    condition = [
      for statement in jsondecode(aws_iam_role_policy.this["agent"].policy).Statement : statement.Resource
      if statement.Action == "secretsmanager:GetSecretValue"
    ] == ["arn:aws:secretsmanager:eu-west-1:123456789012:secret:anthropic-api-key-AbCdEf"]
    error_message = "The agent role may read exactly the configured secret."
  }

  assert {
    condition = length([
      for statement in jsondecode(aws_iam_role_policy.this["agent"].policy).Statement : statement
      if statement.Sid == "AnthropicApiKeySecretDecrypt" &&
      statement.Resource == "arn:aws:kms:eu-west-1:123456789012:key/99999999-8888-7777-6666-555555555555" &&
      try(statement.Condition.StringEquals["kms:ViaService"], null) == "secretsmanager.eu-west-1.amazonaws.com"
    ]) == 1
    error_message = "The secret's KMS key may only be used through Secrets Manager."
  }

  assert {
    condition     = !strcontains(aws_iam_role_policy.this["memory"].policy, "secretsmanager")
    error_message = "The memory role must never read the secret."
  }

  assert {
    condition     = aws_lambda_function.this["agent"].environment[0].variables["ANTHROPIC_API_KEY_SECRET_ARN"] == "arn:aws:secretsmanager:eu-west-1:123456789012:secret:anthropic-api-key-AbCdEf"
    error_message = "The agent function gets ANTHROPIC_API_KEY_SECRET_ARN."
  }

  assert {
    condition     = !contains(keys(aws_lambda_function.this["memory"].environment[0].variables), "ANTHROPIC_API_KEY_SECRET_ARN")
    error_message = "The memory function does not get the secret ARN."
  }
}

run "prefix_scopes_iam" {
  command = plan

  variables {
    memory_prefix = "tenants/prod/"
  }

  assert {
    condition     = aws_lambda_function.this["memory"].environment[0].variables["S3MEMORY_PREFIX"] == "tenants/prod/"
    error_message = "S3MEMORY_PREFIX follows memory_prefix."
  }

  # The role policies mention the key ARN, which is unknown at plan time, so check the locals
  # they are built from.
  assert {
    condition = (
      local.memory_objects_arn == "arn:aws:s3:::s3memory-test-bucket/tenants/prod/*" &&
      [for s in local.memory_store_statements : s.Condition.StringLike["s3:prefix"] if s.Sid == "ListMemoryPrefix"] == ["tenants/prod/*"]
    )
    error_message = "IAM scoping follows memory_prefix."
  }
}

run "noncurrent_version_expiration" {
  command = plan

  variables {
    noncurrent_version_expiration_days = 14
  }

  assert {
    condition     = aws_s3_bucket_lifecycle_configuration.memory[0].rule[0].noncurrent_version_expiration[0].noncurrent_days == 14
    error_message = "noncurrent_version_expiration_days is applied."
  }

  assert {
    condition = alltrue([
      for rule in aws_s3_bucket_lifecycle_configuration.memory[0].rule :
      alltrue([for expiration in rule.expiration : contains([null, 0], expiration.days) && expiration.date == null])
    ])
    error_message = "No lifecycle rule expires current objects (it would expire users' wrapped data keys too)."
  }
}

run "custom_sizes_names_and_logs" {
  command = plan

  variables {
    name_prefix                 = "team-a"
    lambda_runtime              = "python3.12"
    memory_function_timeout     = 10
    memory_function_memory_size = 1024
    agent_function_timeout      = 300
    agent_model                 = "claude-opus-4-1"
    log_retention_in_days       = 90
    encrypt_log_groups          = false
    force_destroy               = true
    kms_key_alias               = "alias/team-a-memory"
    access_log_bucket           = "central-access-logs"
    tags                        = { team = "a" }
  }

  assert {
    condition = (
      aws_lambda_function.this["memory"].function_name == "team-a-memory" &&
      aws_lambda_function.this["agent"].function_name == "team-a-agent" &&
      aws_iam_role.this["memory"].name == "team-a-memory-lambda" &&
      aws_cloudwatch_log_group.this["agent"].name == "/aws/lambda/team-a-agent"
    )
    error_message = "Names follow name_prefix."
  }

  assert {
    condition = (
      aws_lambda_function.this["memory"].runtime == "python3.12" &&
      aws_lambda_function.this["memory"].timeout == 10 &&
      aws_lambda_function.this["memory"].memory_size == 1024 &&
      aws_lambda_function.this["agent"].timeout == 300 &&
      aws_lambda_function.this["agent"].environment[0].variables["S3MEMORY_MODEL"] == "claude-opus-4-1"
    )
    error_message = "Function settings follow their variables."
  }

  assert {
    condition = (
      aws_cloudwatch_log_group.this["memory"].retention_in_days == 90 &&
      aws_cloudwatch_log_group.this["memory"].kms_key_id == null &&
      length([for s in local.kms_key_policy.Statement : s if s.Sid == "CloudWatchLogsForModuleLogGroups"]) == 0
    )
    error_message = "Retention follows the variable; log encryption can be turned off (and the key policy drops the logs grant)."
  }

  assert {
    condition     = aws_s3_bucket.memory[0].force_destroy && aws_kms_alias.memory[0].name == "alias/team-a-memory"
    error_message = "force_destroy and the alias follow their variables."
  }

  assert {
    condition     = aws_s3_bucket_logging.memory[0].target_bucket == "central-access-logs" && aws_s3_bucket_logging.memory[0].target_prefix == "s3memory/"
    error_message = "Access logging goes to access_log_bucket."
  }

  assert {
    condition     = aws_s3_bucket.memory[0].tags == tomap({ "s3memory:module" = "s3memory", team = "a" })
    error_message = "Tags are merged over the module tag."
  }
}

run "xray_active_adds_only_xray" {
  command = apply

  variables {
    tracing_mode = "Active"
  }

  assert {
    condition     = aws_lambda_function.this["memory"].tracing_config[0].mode == "Active"
    error_message = "tracing_mode is applied."
  }

  assert {
    condition = alltrue([
      for policy in [aws_iam_role_policy.this["memory"].policy, aws_iam_role_policy.this["agent"].policy] :
      [for s in jsondecode(policy).Statement : s.Action if s.Resource == "*"] == [["xray:PutTraceSegments", "xray:PutTelemetryRecords"]]
    ])
    error_message = "Only the X-Ray write actions may have resource \"*\"."
  }
}
