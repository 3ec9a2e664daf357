# Variable validation rejects bad input before anything is planned. Each run sets several bad
# values at once; `expect_failures` fails the run if any one of the listed variables was accepted.
# (Runs are grouped because every run restarts the provider.)

mock_provider "aws" {
  source = "./tests/mocks"
}

variables {
  bucket_name     = "s3memory-test-bucket"
  lambda_zip_path = "tests/fixtures/lambda.zip"
}

run "rejects_bad_bucket_settings" {
  command = plan

  variables {
    bucket_name                            = "S3Memory_Bucket" # uppercase and underscore
    memory_prefix                          = "users"           # no trailing slash
    noncurrent_version_expiration_days     = 0
    abort_incomplete_multipart_upload_days = 1.5
    object_expiration_days                 = 365 # removed: only null is accepted
    access_log_bucket                      = "Not A Bucket"
    access_log_prefix                      = "/logs/"
  }

  expect_failures = [
    var.bucket_name,
    var.memory_prefix,
    var.noncurrent_version_expiration_days,
    var.abort_incomplete_multipart_upload_days,
    var.object_expiration_days,
    var.access_log_bucket,
    var.access_log_prefix,
  ]
}

run "rejects_dotted_bucket_and_empty_prefix" {
  command = plan

  variables {
    bucket_name   = "memory.example.com" # dots break virtual-hosted TLS
    memory_prefix = ""                   # would widen IAM to the whole bucket
  }

  expect_failures = [var.bucket_name, var.memory_prefix]
}

run "rejects_reserved_bucket_suffix_and_dot_segments" {
  command = plan

  variables {
    bucket_name   = "memory-s3alias"
    memory_prefix = "users/../"
  }

  expect_failures = [var.bucket_name, var.memory_prefix]
}

run "rejects_bad_kms_settings" {
  command = plan

  variables {
    kms_key_alias                   = "agent-memory" # missing alias/
    kms_key_deletion_window_in_days = 3
    additional_key_user_arns        = ["*"]
    kms_key_administrator_arns      = ["arn:aws:iam::123456789012:root"]
  }

  expect_failures = [
    var.kms_key_alias,
    var.kms_key_deletion_window_in_days,
    var.additional_key_user_arns,
    var.kms_key_administrator_arns,
  ]
}

run "rejects_aws_reserved_alias_and_wildcard_administrators" {
  command = plan

  variables {
    kms_key_alias              = "alias/aws/s3"
    kms_key_administrator_arns = ["arn:aws:iam::123456789012:role/*"]
  }

  expect_failures = [var.kms_key_alias, var.kms_key_administrator_arns]
}

run "rejects_bad_limits_guard_and_logging" {
  command = plan

  variables {
    memory_quota_bytes       = 0
    memory_quota_files       = 1.5
    content_guard_mode       = "warn"
    max_file_bytes           = 4194305
    log_level                = "info" # Lambda's levels are upper case
    jwt_authorization_scopes = ["memory read"]
    jwt_audience             = ["client-a,client-b"] # passed on comma-separated
  }

  expect_failures = [
    var.memory_quota_bytes,
    var.memory_quota_files,
    var.content_guard_mode,
    var.max_file_bytes,
    var.log_level,
    var.jwt_authorization_scopes,
    var.jwt_audience,
  ]
}

run "rejects_negative_and_empty_limits" {
  command = plan

  variables {
    memory_quota_bytes       = -1
    memory_quota_files       = 0
    max_file_bytes           = 0
    jwt_authorization_scopes = [""]
    jwt_issuer               = "https://issuer.example.com/?tenant=a" # the function refuses a query
    jwt_audience             = ["client a"]                           # and audiences with spaces
  }

  expect_failures = [
    var.memory_quota_bytes,
    var.memory_quota_files,
    var.max_file_bytes,
    var.jwt_authorization_scopes,
    var.jwt_issuer,
    var.jwt_audience,
  ]
}

run "rejects_bad_lambda_settings" {
  command = plan

  variables {
    lambda_zip_path                      = "tests/fixtures/does-not-exist.zip"
    lambda_runtime                       = "python3.9"
    lambda_architecture                  = "riscv64"
    memory_function_timeout              = 0
    memory_function_memory_size          = 127.5
    memory_function_reserved_concurrency = -2 # null is unreserved
    agent_function_timeout               = 901
    agent_function_memory_size           = 64
    agent_function_reserved_concurrency  = 1.5
    agent_model                          = "Claude Sonnet"
    anthropic_api_key_secret_arn         = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:*"
    anthropic_api_key_secret_kms_key_arn = "alias/secrets"
    tracing_mode                         = "On"
  }

  expect_failures = [
    var.lambda_zip_path,
    var.lambda_runtime,
    var.lambda_architecture,
    var.memory_function_timeout,
    var.memory_function_memory_size,
    var.memory_function_reserved_concurrency,
    var.agent_function_timeout,
    var.agent_function_memory_size,
    var.agent_function_reserved_concurrency,
    var.agent_model,
    var.anthropic_api_key_secret_arn,
    var.anthropic_api_key_secret_kms_key_arn,
    var.tracing_mode,
  ]
}

run "rejects_bad_naming_logging_and_api_settings" {
  command = plan

  variables {
    name_prefix                  = "-Bad_Prefix"
    tags                         = { "aws:owner" = "me" }
    iam_role_path                = "service"
    iam_permissions_boundary_arn = "boundary"
    log_retention_in_days        = 31
    jwt_issuer                   = "http://issuer.example.com"
    jwt_audience                 = [""]
    api_throttling_burst_limit   = -1
    api_throttling_rate_limit    = -1
  }

  expect_failures = [
    var.name_prefix,
    var.tags,
    var.iam_role_path,
    var.iam_permissions_boundary_arn,
    var.log_retention_in_days,
    var.jwt_issuer,
    var.jwt_audience,
    var.api_throttling_burst_limit,
    var.api_throttling_rate_limit,
  ]
}

run "accepts_valid_non_default_values" {
  command = plan

  variables {
    bucket_name                  = "my-org-agent-memory-prod"
    memory_prefix                = "tenants/prod_1/"
    kms_key_alias                = "alias/team/agent-memory"
    expiry_idle_days             = 180
    expiry_schedule_expression   = "cron(0 3 ? * MON-FRI *)"
    expiry_function_timeout      = 600
    additional_key_user_arns     = ["arn:aws:iam::123456789012:role/ops/s3memory-operator"]
    anthropic_api_key_secret_arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/anthropic-AbCdEf"
    iam_role_path                = "/service/s3memory/"
    iam_permissions_boundary_arn = "arn:aws:iam::123456789012:policy/boundary"
    log_retention_in_days        = 0
    lambda_architecture          = "arm64"
    kms_key_administrator_arns   = ["arn:aws:iam::123456789012:role/ci/terraform-deployer", "arn:aws:iam::123456789012:user/break-glass"]
    jwt_authorization_scopes     = ["memory/read", "https://api.example.com/memory.write"]
  }

  assert {
    condition     = aws_iam_role.this["memory"].path == "/service/s3memory/" && aws_iam_role.this["memory"].permissions_boundary == "arn:aws:iam::123456789012:policy/boundary"
    error_message = "Role path and permissions boundary follow their variables."
  }
}
