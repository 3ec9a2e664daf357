# The dead-letter target and the VPC (network.tf): off by default; a dead-letter target on exactly the
# functions that can be invoked asynchronously (memory, agent, expiry; not MCP), with exactly the
# permission to send to it (and to use its key through SQS or SNS); every function in the VPC, with
# the network-interface permissions of AWSLambdaVPCAccessExecutionRole (no logs ones); subnets and
# security groups both or neither; malformed ARNs and ids refused. Runs that read the roles' policies
# use `apply`: they name the key, whose ARN the mocks only give at apply.

mock_provider "aws" {
  source = "./tests/mocks"
}

variables {
  bucket_name     = "s3memory-test-bucket"
  lambda_zip_path = "tests/fixtures/lambda.zip"
  # Every function, so that each one shows: the agent (with its secret), expiry and the MCP endpoint.
  anthropic_api_key_secret_arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:anthropic-api-key-AbCdEf"
  expiry_idle_days             = 30
  create_http_api              = true
  create_mcp_endpoint          = true
  jwt_issuer                   = "https://issuer.example.com"
  jwt_audience                 = ["s3memory-client"]
}

run "off_by_default" {
  command = apply

  assert {
    condition = alltrue([
      for fn in [aws_lambda_function.this["memory"], aws_lambda_function.this["agent"], aws_lambda_function.this["expiry"], aws_lambda_function.this["mcp"]] :
      length(fn.dead_letter_config) == 0 && length(fn.vpc_config) == 0
    ])
    error_message = "No function has a dead-letter target or a VPC by default."
  }

  assert {
    condition = alltrue([
      for policy in [aws_iam_role_policy.this["memory"].policy, aws_iam_role_policy.this["agent"].policy, aws_iam_role_policy.this["expiry"].policy, aws_iam_role_policy.this["mcp"].policy] :
      !strcontains(policy, "sqs:") && !strcontains(policy, "sns:") && !strcontains(policy, "ec2:")
    ])
    error_message = "No role may send to a queue or topic, or touch network interfaces, by default."
  }
}

run "dead_letter_queue" {
  command = apply

  variables {
    dead_letter_target_arn = "arn:aws:sqs:eu-west-1:123456789012:s3memory-dlq"
  }

  assert {
    condition = alltrue([
      for fn in [aws_lambda_function.this["memory"], aws_lambda_function.this["agent"], aws_lambda_function.this["expiry"]] :
      [for config in fn.dead_letter_config : config.target_arn] == ["arn:aws:sqs:eu-west-1:123456789012:s3memory-dlq"]
    ]) && length(aws_lambda_function.this["mcp"].dead_letter_config) == 0
    error_message = "The memory, agent and expiry functions send failed asynchronous events to the queue; the MCP function (synchronous only) has none."
  }

  assert {
    condition = alltrue([
      for policy in [aws_iam_role_policy.this["memory"].policy, aws_iam_role_policy.this["agent"].policy, aws_iam_role_policy.this["expiry"].policy] :
      [for statement in jsondecode(policy).Statement : statement if statement.Sid == "DeadLetterTarget"] == [{
        Sid      = "DeadLetterTarget"
        Effect   = "Allow"
        Action   = "sqs:SendMessage"
        Resource = "arn:aws:sqs:eu-west-1:123456789012:s3memory-dlq"
      }]
    ]) && !strcontains(aws_iam_role_policy.this["mcp"].policy, "sqs:")
    error_message = "Their roles may sqs:SendMessage to exactly the queue, the MCP role not at all."
  }

  assert {
    condition     = !strcontains(aws_iam_role_policy.this["memory"].policy, "DeadLetterTargetKey")
    error_message = "Without dead_letter_kms_key_arn no key is granted for it."
  }
}

run "dead_letter_topic_with_its_key" {
  command = apply

  variables {
    dead_letter_target_arn  = "arn:aws:sns:eu-west-1:123456789012:s3memory-dead-letters"
    dead_letter_kms_key_arn = "arn:aws:kms:eu-west-1:123456789012:key/99999999-8888-7777-6666-555555555555"
  }

  assert {
    condition = [
      for statement in jsondecode(aws_iam_role_policy.this["expiry"].policy).Statement : statement
      if startswith(statement.Sid, "DeadLetter")
      ] == [
      {
        Sid      = "DeadLetterTarget"
        Effect   = "Allow"
        Action   = "sns:Publish"
        Resource = "arn:aws:sns:eu-west-1:123456789012:s3memory-dead-letters"
      },
      {
        Sid       = "DeadLetterTargetKey"
        Effect    = "Allow"
        Action    = ["kms:GenerateDataKey", "kms:Decrypt"]
        Resource  = "arn:aws:kms:eu-west-1:123456789012:key/99999999-8888-7777-6666-555555555555"
        Condition = { StringEquals = { "kms:ViaService" = "sns.eu-west-1.amazonaws.com" } }
      },
    ]
    error_message = "A topic: sns:Publish to exactly it, and its key only through SNS."
  }

  assert {
    condition     = [for config in aws_lambda_function.this["memory"].dead_letter_config : config.target_arn] == ["arn:aws:sns:eu-west-1:123456789012:s3memory-dead-letters"]
    error_message = "The memory function's dead-letter target is the topic."
  }
}

run "vpc" {
  command = apply

  variables {
    vpc_subnet_ids         = ["subnet-0123456789abcdef0", "subnet-89abcdef"]
    vpc_security_group_ids = ["sg-0123456789abcdef0"]
  }

  assert {
    condition = alltrue([
      for fn in [aws_lambda_function.this["memory"], aws_lambda_function.this["agent"], aws_lambda_function.this["expiry"], aws_lambda_function.this["mcp"]] :
      [for config in fn.vpc_config : [toset(config.subnet_ids), toset(config.security_group_ids)]] == [[
        toset(["subnet-0123456789abcdef0", "subnet-89abcdef"]), toset(["sg-0123456789abcdef0"]),
      ]]
    ])
    error_message = "Every function runs in the subnets with the security groups."
  }

  assert {
    condition = alltrue([
      for policy in [aws_iam_role_policy.this["memory"].policy, aws_iam_role_policy.this["agent"].policy, aws_iam_role_policy.this["expiry"].policy, aws_iam_role_policy.this["mcp"].policy] :
      [for statement in jsondecode(policy).Statement : statement if startswith(statement.Sid, "Vpc")] == [
        {
          Sid      = "VpcNetworkInterfacesDescribe"
          Effect   = "Allow"
          Action   = ["ec2:DescribeNetworkInterfaces", "ec2:DescribeSubnets"]
          Resource = "*"
        },
        {
          Sid      = "VpcNetworkInterfaces"
          Effect   = "Allow"
          Action   = ["ec2:CreateNetworkInterface", "ec2:DeleteNetworkInterface", "ec2:AssignPrivateIpAddresses", "ec2:UnassignPrivateIpAddresses"]
          Resource = "arn:aws:ec2:eu-west-1:*:*"
        },
      ]
    ])
    error_message = "Each role gets AWSLambdaVPCAccessExecutionRole's network-interface permissions, the changes on this region's EC2 resources only."
  }

  assert {
    condition = alltrue([
      for policy in [aws_iam_role_policy.this["memory"].policy, aws_iam_role_policy.this["agent"].policy, aws_iam_role_policy.this["expiry"].policy, aws_iam_role_policy.this["mcp"].policy] :
      !strcontains(policy, "logs:CreateLogGroup")
    ])
    error_message = "The managed policy's logs:CreateLogGroup is not among them."
  }
}

run "vpc_refuses_subnets_without_security_groups" {
  command = plan

  variables {
    vpc_subnet_ids = ["subnet-0123456789abcdef0"]
  }

  expect_failures = [aws_lambda_function.this["memory"]]
}

run "vpc_refuses_security_groups_without_subnets" {
  command = plan

  variables {
    vpc_security_group_ids = ["sg-0123456789abcdef0"]
  }

  expect_failures = [aws_lambda_function.this["memory"]]
}

run "rejects_bad_dead_letter_and_vpc_settings" {
  command = plan

  variables {
    dead_letter_target_arn  = "arn:aws:sqs:eu-west-1:123456789012:s3memory-dlq.fifo"
    dead_letter_kms_key_arn = "alias/dlq"
    vpc_subnet_ids          = ["subnet-xyz"]
    vpc_security_group_ids  = ["sg-1", "sg-2", "sg-3", "sg-4", "sg-5", "sg-6"]
  }

  expect_failures = [
    var.dead_letter_target_arn,
    var.dead_letter_kms_key_arn,
    var.vpc_subnet_ids,
    var.vpc_security_group_ids,
  ]
}

run "rejects_a_dead_letter_target_of_another_service" {
  command = plan

  variables {
    dead_letter_target_arn = "arn:aws:lambda:eu-west-1:123456789012:function:elsewhere"
  }

  expect_failures = [var.dead_letter_target_arn]
}
