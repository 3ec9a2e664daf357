# Idle expiry (expiry_idle_days): off by default, and then nothing of it exists; when on, the expiry
# function (handler, environment, one run at a time), its least-privilege role (list, read and delete
# under the prefix, Decrypt only), its log group, the schedule that invokes it and the schedule's
# role (trusted by EventBridge Scheduler for this account, InvokeFunction on that function only),
# and the key policy's Decrypt-only statements for it. The serving roles do not change. Runs that
# read policies use `apply`: they name the key ARN, which the mocks only give at apply.

mock_provider "aws" {
  source = "./tests/mocks"
}

variables {
  bucket_name     = "s3memory-test-bucket"
  lambda_zip_path = "tests/fixtures/lambda.zip"
  # The agent function exists by default only with an Anthropic API key secret (agent.tftest.hcl);
  # these runs examine it too.
  anthropic_api_key_secret_arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:anthropic-api-key-AbCdEf"

  # The expiry role's policy, in full.
  expected_expiry_role_policy = {
    Version = "2012-10-17"
    Statement = [
      {
        Sid       = "ListMemoryPrefix"
        Effect    = "Allow"
        Action    = "s3:ListBucket"
        Resource  = "arn:aws:s3:::s3memory-test-bucket"
        Condition = { StringLike = { "s3:prefix" = "users/*" } }
      },
      {
        Sid      = "ReadAndDeleteMemoryObjects"
        Effect   = "Allow"
        Action   = ["s3:GetObject", "s3:DeleteObject"]
        Resource = "arn:aws:s3:::s3memory-test-bucket/users/*"
      },
      {
        Sid      = "DecryptWithS3memoryContext"
        Effect   = "Allow"
        Action   = "kms:Decrypt"
        Resource = "arn:aws:kms:eu-west-1:123456789012:key/11111111-2222-3333-4444-555555555555"
        # Storage format 2 (the default): the store identity of s3memory-test-bucket at users/.
        Condition = {
          Null         = { "kms:EncryptionContext:s3memory:user" = "false" }
          StringEquals = { "kms:EncryptionContext:s3memory:store" = "9effe05508c5b6192fe271e1421f8f88" }
        }
      },
      {
        Sid      = "DecryptViaS3"
        Effect   = "Allow"
        Action   = "kms:Decrypt"
        Resource = "arn:aws:kms:eu-west-1:123456789012:key/11111111-2222-3333-4444-555555555555"
        Condition = {
          StringEquals = { "kms:ViaService" = "s3.eu-west-1.amazonaws.com" }
          StringLike   = { "kms:EncryptionContext:aws:s3:arn" = ["arn:aws:s3:::s3memory-test-bucket", "arn:aws:s3:::s3memory-test-bucket/users/*"] }
        }
      },
      {
        Sid      = "OwnLogGroup"
        Effect   = "Allow"
        Action   = ["logs:CreateLogStream", "logs:PutLogEvents"]
        Resource = "arn:aws:logs:eu-west-1:123456789012:log-group:/aws/lambda/s3memory-expiry:*"
      },
    ]
  }
}

run "off_by_default" {
  command = apply

  assert {
    condition = (
      !contains(keys(aws_lambda_function.this), "expiry") &&
      length(aws_scheduler_schedule.expiry) == 0 &&
      !contains(keys(aws_iam_role.this), "expiry") &&
      !contains(keys(aws_iam_role_policy.this), "expiry") &&
      length(aws_iam_role.expiry_scheduler) == 0 &&
      length(aws_iam_role_policy.expiry_scheduler) == 0 &&
      !contains(keys(aws_cloudwatch_log_group.this), "expiry")
    )
    error_message = "Without expiry_idle_days there is no expiry function, schedule, role or log group."
  }

  assert {
    condition     = output.expiry_function_name == null && output.log_group_names.expiry == null
    error_message = "expiry_function_name (and the expiry log group) are null when expiry is off."
  }

  assert {
    condition     = !strcontains(aws_kms_key.memory[0].policy, "expiry") && !strcontains(aws_kms_key.memory[0].policy, "Expiry")
    error_message = "The key policy names no expiry role that does not exist."
  }

  assert {
    condition = [for rule in aws_s3_bucket_lifecycle_configuration.memory[0].rule : rule.id] == [
      "expire-noncurrent-versions",
      "abort-incomplete-multipart-uploads",
    ]
    error_message = "The lifecycle rules never expire current objects (object_expiration_days' rule is gone)."
  }
}

run "schedule_alone_creates_nothing" {
  command = plan

  variables {
    expiry_schedule_expression = "cron(0 3 * * ? *)"
    expiry_function_timeout    = 60
  }

  assert {
    condition     = !contains(keys(aws_lambda_function.this), "expiry") && length(aws_scheduler_schedule.expiry) == 0
    error_message = "The schedule and timeout settings alone turn nothing on."
  }
}

run "on_creates_the_function_schedule_and_roles" {
  command = apply

  variables {
    expiry_idle_days = 30
  }

  # The function.
  assert {
    condition = (
      aws_lambda_function.this["expiry"].function_name == "s3memory-expiry" &&
      aws_lambda_function.this["expiry"].handler == "s3memory.aws_lambda.expiry.handler" &&
      aws_lambda_function.this["expiry"].role == aws_iam_role.this["expiry"].arn &&
      aws_lambda_function.this["expiry"].runtime == aws_lambda_function.this["memory"].runtime &&
      aws_lambda_function.this["expiry"].architectures == aws_lambda_function.this["memory"].architectures &&
      aws_lambda_function.this["expiry"].filename == aws_lambda_function.this["memory"].filename &&
      aws_lambda_function.this["expiry"].source_code_hash == aws_lambda_function.this["memory"].source_code_hash &&
      aws_lambda_function.this["expiry"].timeout == 900 &&
      aws_lambda_function.this["expiry"].reserved_concurrent_executions == 1 &&
      aws_lambda_function.this["expiry"].tracing_config[0].mode == "PassThrough" &&
      aws_lambda_function.this["expiry"].tags["s3memory:module"] == "s3memory"
    )
    error_message = "The expiry function: its handler, its role, the memory function's zip, runtime and architecture, 900 s, one run at a time."
  }

  assert {
    condition = aws_lambda_function.this["expiry"].environment[0].variables == tomap({
      S3MEMORY_BUCKET           = "s3memory-test-bucket"
      S3MEMORY_PREFIX           = "users/"
      S3MEMORY_KMS_KEY_ID       = aws_kms_key.memory[0].arn
      S3MEMORY_STORAGE_FORMAT   = "2"
      S3MEMORY_STORE_ID         = "s3memory-test-bucket"
      S3MEMORY_EXPIRE_IDLE_DAYS = "30"
    })
    error_message = "The expiry function's environment is the store's (bucket, prefix, key ARN, format 2 and the store's id) and S3MEMORY_EXPIRE_IDLE_DAYS, nothing else."
  }

  assert {
    condition = (
      aws_lambda_function.this["expiry"].logging_config[0].log_format == "JSON" &&
      aws_lambda_function.this["expiry"].logging_config[0].application_log_level == "INFO" &&
      aws_lambda_function.this["expiry"].logging_config[0].system_log_level == "WARN"
    )
    error_message = "The expiry function logs as the others do (JSON, application INFO, system WARN)."
  }

  assert {
    condition = (
      aws_cloudwatch_log_group.this["expiry"].name == "/aws/lambda/s3memory-expiry" &&
      aws_cloudwatch_log_group.this["expiry"].retention_in_days == 30 &&
      aws_cloudwatch_log_group.this["expiry"].kms_key_id == aws_kms_key.memory[0].arn &&
      output.log_group_names.expiry == "/aws/lambda/s3memory-expiry"
    )
    error_message = "The expiry function has its own log group, with the others' retention and encryption."
  }

  assert {
    condition     = output.expiry_function_name == "s3memory-expiry"
    error_message = "expiry_function_name names the function."
  }

  # Its role: assumed by Lambda, exactly the expiry policy.
  assert {
    condition = (
      aws_iam_role.this["expiry"].name == "s3memory-expiry-lambda" &&
      aws_iam_role.this["expiry"].path == "/" &&
      jsondecode(aws_iam_role.this["expiry"].assume_role_policy) == jsondecode(aws_iam_role.this["memory"].assume_role_policy) &&
      jsondecode(aws_iam_role.this["expiry"].assume_role_policy).Statement[0].Principal.Service == "lambda.amazonaws.com"
    )
    error_message = "The expiry role is <name_prefix>-expiry-lambda, assumed by Lambda like the other execution roles."
  }

  assert {
    condition     = jsondecode(aws_iam_role_policy.this["expiry"].policy) == jsondecode(jsonencode(var.expected_expiry_role_policy))
    error_message = "The expiry role's policy is exactly: list under the prefix, get and delete objects under it, Decrypt (s3memory context, or via S3 for this bucket), its own log group."
  }

  assert {
    condition = toset(flatten([
      for statement in jsondecode(aws_iam_role_policy.this["expiry"].policy).Statement : flatten([statement.Action])
      ])) == toset([
      "s3:ListBucket", "s3:GetObject", "s3:DeleteObject", "kms:Decrypt", "logs:CreateLogStream", "logs:PutLogEvents",
    ])
    error_message = "The expiry role has no PutObject, no GenerateDataKey and no version permission."
  }

  assert {
    condition     = aws_iam_role_policy.this["expiry"].role == aws_iam_role.this["expiry"].id
    error_message = "The expiry policy is the expiry role's inline policy."
  }

  # The schedule.
  assert {
    condition = (
      aws_scheduler_schedule.expiry[0].name == "s3memory-expiry" &&
      aws_scheduler_schedule.expiry[0].schedule_expression == "rate(1 day)" &&
      aws_scheduler_schedule.expiry[0].flexible_time_window[0].mode == "OFF" &&
      aws_scheduler_schedule.expiry[0].target[0].arn == aws_lambda_function.this["expiry"].arn &&
      aws_scheduler_schedule.expiry[0].target[0].role_arn == aws_iam_role.expiry_scheduler[0].arn &&
      jsondecode(aws_scheduler_schedule.expiry[0].target[0].input) == {}
    )
    error_message = "The schedule runs the expiry function daily by default, without a flexible window, with the input {} and its own role."
  }

  # The schedule's role: trusted by EventBridge Scheduler of this account, may invoke that function only.
  assert {
    condition = jsondecode(aws_iam_role.expiry_scheduler[0].assume_role_policy) == jsondecode(jsonencode({
      Version = "2012-10-17"
      Statement = [{
        Sid       = "SchedulerAssumeRole"
        Effect    = "Allow"
        Principal = { Service = "scheduler.amazonaws.com" }
        Action    = "sts:AssumeRole"
        Condition = { StringEquals = { "aws:SourceAccount" = "123456789012" } }
      }]
    }))
    error_message = "Only EventBridge Scheduler, for schedules of this account, may assume the schedule's role."
  }

  assert {
    condition = jsondecode(aws_iam_role_policy.expiry_scheduler[0].policy) == jsondecode(jsonencode({
      Version = "2012-10-17"
      Statement = [{
        Sid      = "InvokeExpiryFunction"
        Effect   = "Allow"
        Action   = "lambda:InvokeFunction"
        Resource = "arn:aws:lambda:eu-west-1:123456789012:function:s3memory-expiry"
      }]
    })) && aws_iam_role_policy.expiry_scheduler[0].role == aws_iam_role.expiry_scheduler[0].id
    error_message = "The schedule's role may only invoke the expiry function."
  }

  assert {
    condition     = jsondecode(aws_iam_role_policy.expiry_scheduler[0].policy).Statement[0].Resource == aws_lambda_function.this["expiry"].arn
    error_message = "The ARN the schedule's role may invoke is the expiry function's."
  }

  assert {
    condition = (
      aws_iam_role.expiry_scheduler[0].name == "s3memory-expiry-scheduler" &&
      aws_iam_role.expiry_scheduler[0].path == "/" &&
      aws_iam_role.expiry_scheduler[0].permissions_boundary == null
    )
    error_message = "The schedule's role is <name_prefix>-expiry-scheduler, with the module's path and boundary."
  }

  # The key policy: the expiry role may Decrypt, under the key users' conditions, and nothing else.
  assert {
    condition = {
      for statement in jsondecode(aws_kms_key.memory[0].policy).Statement : statement.Sid => statement
      if contains(flatten([try(statement.Principal.AWS, [])]), aws_iam_role.this["expiry"].arn)
      } == jsondecode(jsonencode({
        ExpiryDecryptWithS3memoryContext = {
          Sid       = "ExpiryDecryptWithS3memoryContext"
          Effect    = "Allow"
          Principal = { AWS = "arn:aws:iam::123456789012:role/s3memory-expiry-lambda" }
          Action    = "kms:Decrypt"
          Resource  = "*"
          Condition = {
            Null         = { "kms:EncryptionContext:s3memory:user" = "false" }
            StringEquals = { "kms:EncryptionContext:s3memory:store" = "9effe05508c5b6192fe271e1421f8f88" }
          }
        }
        ExpiryDecryptViaS3 = {
          Sid       = "ExpiryDecryptViaS3"
          Effect    = "Allow"
          Principal = { AWS = "arn:aws:iam::123456789012:role/s3memory-expiry-lambda" }
          Action    = "kms:Decrypt"
          Resource  = "*"
          Condition = {
            StringEquals = {
              "kms:ViaService"    = "s3.eu-west-1.amazonaws.com"
              "kms:CallerAccount" = "123456789012"
            }
            StringLike = { "kms:EncryptionContext:aws:s3:arn" = ["arn:aws:s3:::s3memory-test-bucket", "arn:aws:s3:::s3memory-test-bucket/users/*"] }
          }
        }
    }))
    error_message = "The expiry role appears in the key policy only in its two Decrypt statements (s3memory context; via S3 for this bucket)."
  }

  assert {
    condition = alltrue([
      for statement in jsondecode(aws_kms_key.memory[0].policy).Statement :
      toset(flatten([statement.Principal.AWS])) == toset([aws_iam_role.this["memory"].arn, aws_iam_role.this["agent"].arn])
      if contains(["EnvelopeKeysWithS3memoryContext", "BucketSseViaS3"], statement.Sid)
    ])
    error_message = "The key users with GenerateDataKey stay the two Lambda roles."
  }

  assert {
    condition = contains([
      for statement in jsondecode(aws_kms_key.memory[0].policy).Statement : statement.Condition.ArnEquals["kms:EncryptionContext:aws:logs:arn"]
      if statement.Sid == "CloudWatchLogsForModuleLogGroups"
    ][0], "arn:aws:logs:eu-west-1:123456789012:log-group:/aws/lambda/s3memory-expiry")
    error_message = "CloudWatch Logs may use the key for the expiry log group too."
  }

  # The serving roles are unchanged.
  assert {
    condition = alltrue([
      for policy in [aws_iam_role_policy.this["memory"].policy, aws_iam_role_policy.this["agent"].policy] : !strcontains(policy, "expiry")
    ])
    error_message = "The serving roles' policies do not change with expiry on."
  }

  assert {
    condition     = !contains(keys(aws_lambda_function.this["memory"].environment[0].variables), "S3MEMORY_EXPIRE_IDLE_DAYS") && !contains(keys(aws_lambda_function.this["agent"].environment[0].variables), "S3MEMORY_EXPIRE_IDLE_DAYS")
    error_message = "Only the expiry function gets S3MEMORY_EXPIRE_IDLE_DAYS."
  }
}

run "options_follow_their_variables" {
  command = apply

  variables {
    expiry_idle_days             = 3650
    expiry_schedule_expression   = "cron(0 3 ? * MON-FRI *)"
    expiry_function_timeout      = 300
    name_prefix                  = "acme-memory"
    memory_prefix                = "tenants/prod/"
    iam_role_path                = "/service/s3memory/"
    iam_permissions_boundary_arn = "arn:aws:iam::123456789012:policy/boundary"
    lambda_runtime               = "python3.12"
    lambda_architecture          = "arm64"
    tracing_mode                 = "Active"
    log_level                    = "DEBUG"
    encrypt_log_groups           = false
  }

  assert {
    condition = (
      aws_lambda_function.this["expiry"].function_name == "acme-memory-expiry" &&
      aws_lambda_function.this["expiry"].timeout == 300 &&
      aws_lambda_function.this["expiry"].runtime == "python3.12" &&
      aws_lambda_function.this["expiry"].architectures == tolist(["arm64"]) &&
      aws_lambda_function.this["expiry"].tracing_config[0].mode == "Active" &&
      aws_lambda_function.this["expiry"].logging_config[0].application_log_level == "DEBUG" &&
      aws_lambda_function.this["expiry"].environment[0].variables["S3MEMORY_EXPIRE_IDLE_DAYS"] == "3650" &&
      aws_lambda_function.this["expiry"].environment[0].variables["S3MEMORY_PREFIX"] == "tenants/prod/"
    )
    error_message = "Name, timeout, runtime, architecture, tracing, log level, days and prefix follow their variables."
  }

  assert {
    condition = (
      aws_scheduler_schedule.expiry[0].name == "acme-memory-expiry" &&
      aws_scheduler_schedule.expiry[0].schedule_expression == "cron(0 3 ? * MON-FRI *)"
    )
    error_message = "The schedule follows expiry_schedule_expression."
  }

  assert {
    condition = alltrue([
      for role in [aws_iam_role.this["expiry"], aws_iam_role.expiry_scheduler[0]] :
      role.path == "/service/s3memory/" && role.permissions_boundary == "arn:aws:iam::123456789012:policy/boundary"
      ]) && (
      aws_iam_role.this["expiry"].name == "acme-memory-expiry-lambda" &&
      aws_iam_role.expiry_scheduler[0].name == "acme-memory-expiry-scheduler"
    )
    error_message = "Both expiry roles take the module's path and permissions boundary."
  }

  assert {
    condition = {
      for statement in jsondecode(aws_iam_role_policy.this["expiry"].policy).Statement : statement.Sid => statement.Resource
      if contains(["ListMemoryPrefix", "ReadAndDeleteMemoryObjects", "OwnLogGroup", "XRayWrite"], statement.Sid)
      } == {
      ListMemoryPrefix           = "arn:aws:s3:::s3memory-test-bucket"
      ReadAndDeleteMemoryObjects = "arn:aws:s3:::s3memory-test-bucket/tenants/prod/*"
      OwnLogGroup                = "arn:aws:logs:eu-west-1:123456789012:log-group:/aws/lambda/acme-memory-expiry:*"
      XRayWrite                  = "*"
    }
    error_message = "memory_prefix and name_prefix scope the expiry role; X-Ray's write permission comes with tracing_mode = \"Active\" as for the other roles."
  }

  assert {
    condition     = jsondecode(aws_iam_role_policy.expiry_scheduler[0].policy).Statement[0].Resource == "arn:aws:lambda:eu-west-1:123456789012:function:acme-memory-expiry"
    error_message = "The schedule's role may invoke the renamed function."
  }

  assert {
    condition     = aws_cloudwatch_log_group.this["expiry"].name == "/aws/lambda/acme-memory-expiry" && aws_cloudwatch_log_group.this["expiry"].kms_key_id == null
    error_message = "The log group follows name_prefix and encrypt_log_groups."
  }
}

run "refuses_bad_idle_days_schedule_and_timeout" {
  command = plan

  variables {
    expiry_idle_days           = 0
    expiry_schedule_expression = "at(2030-01-01T00:00:00)" # one-time, not recurring
    expiry_function_timeout    = 901
  }

  expect_failures = [
    var.expiry_idle_days,
    var.expiry_schedule_expression,
    var.expiry_function_timeout,
  ]
}

run "refuses_fractional_days_and_a_short_cron" {
  command = plan

  variables {
    expiry_idle_days           = 1.5
    expiry_schedule_expression = "cron(0 3 * *)" # five fields: EventBridge wants six
    expiry_function_timeout    = 0
  }

  expect_failures = [
    var.expiry_idle_days,
    var.expiry_schedule_expression,
    var.expiry_function_timeout,
  ]
}

run "refuses_too_many_days_and_a_bad_rate" {
  command = plan

  variables {
    expiry_idle_days           = 3651
    expiry_schedule_expression = "rate(0 days)"
  }

  expect_failures = [var.expiry_idle_days, var.expiry_schedule_expression]
}

run "refuses_negative_days_and_an_unknown_unit" {
  command = plan

  variables {
    expiry_idle_days           = -1
    expiry_schedule_expression = "rate(1 fortnight)"
  }

  expect_failures = [var.expiry_idle_days, var.expiry_schedule_expression]
}

run "refuses_an_empty_schedule" {
  command = plan

  variables {
    expiry_idle_days           = 30
    expiry_schedule_expression = ""
  }

  expect_failures = [var.expiry_schedule_expression]
}

run "refuses_object_expiration_days" {
  command = plan

  variables {
    object_expiration_days = 365
  }

  expect_failures = [var.object_expiration_days]
}
