# Variable validation rejects bad input before anything is planned.

mock_provider "aws" {
  source = "./tests/mocks"
}

variables {
  bucket_name     = "s3memory-test-bucket"
  lambda_zip_path = "tests/fixtures/lambda.zip"
}

run "rejects_bucket_name_with_uppercase" {
  command = plan

  variables {
    bucket_name = "S3Memory_Bucket"
  }

  expect_failures = [var.bucket_name]
}

run "rejects_bucket_name_with_dots" {
  command = plan

  variables {
    bucket_name = "memory.example.com"
  }

  expect_failures = [var.bucket_name]
}

run "rejects_reserved_bucket_suffix" {
  command = plan

  variables {
    bucket_name = "memory-s3alias"
  }

  expect_failures = [var.bucket_name]
}

run "rejects_prefix_without_trailing_slash" {
  command = plan

  variables {
    memory_prefix = "users"
  }

  expect_failures = [var.memory_prefix]
}

run "rejects_empty_prefix" {
  command = plan

  variables {
    memory_prefix = ""
  }

  expect_failures = [var.memory_prefix]
}

run "rejects_dot_segment_prefix" {
  command = plan

  variables {
    memory_prefix = "users/../"
  }

  expect_failures = [var.memory_prefix]
}

run "rejects_alias_without_prefix" {
  command = plan

  variables {
    kms_key_alias = "agent-memory"
  }

  expect_failures = [var.kms_key_alias]
}

run "rejects_aws_reserved_alias" {
  command = plan

  variables {
    kms_key_alias = "alias/aws/s3"
  }

  expect_failures = [var.kms_key_alias]
}

run "rejects_short_deletion_window" {
  command = plan

  variables {
    kms_key_deletion_window_in_days = 3
  }

  expect_failures = [var.kms_key_deletion_window_in_days]
}

run "rejects_unsupported_log_retention" {
  command = plan

  variables {
    log_retention_in_days = 31
  }

  expect_failures = [var.log_retention_in_days]
}

run "rejects_unsupported_runtime" {
  command = plan

  variables {
    lambda_runtime = "python3.9"
  }

  expect_failures = [var.lambda_runtime]
}

run "rejects_unknown_architecture" {
  command = plan

  variables {
    lambda_architecture = "riscv64"
  }

  expect_failures = [var.lambda_architecture]
}

run "rejects_missing_zip" {
  command = plan

  variables {
    lambda_zip_path = "tests/fixtures/does-not-exist.zip"
  }

  expect_failures = [var.lambda_zip_path]
}

run "rejects_timeout_over_limit" {
  command = plan

  variables {
    agent_function_timeout = 901
  }

  expect_failures = [var.agent_function_timeout]
}

run "rejects_fractional_memory_size" {
  command = plan

  variables {
    memory_function_memory_size = 127.5
  }

  expect_failures = [var.memory_function_memory_size]
}

run "rejects_wildcard_secret_arn" {
  command = plan

  variables {
    anthropic_api_key_secret_arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:*"
  }

  expect_failures = [var.anthropic_api_key_secret_arn]
}

run "rejects_non_https_issuer" {
  command = plan

  variables {
    jwt_issuer = "http://issuer.example.com"
  }

  expect_failures = [var.jwt_issuer]
}

run "rejects_empty_audience" {
  command = plan

  variables {
    jwt_audience = [""]
  }

  expect_failures = [var.jwt_audience]
}

run "rejects_bad_name_prefix" {
  command = plan

  variables {
    name_prefix = "-Bad_Prefix"
  }

  expect_failures = [var.name_prefix]
}

run "rejects_zero_noncurrent_days" {
  command = plan

  variables {
    noncurrent_version_expiration_days = 0
  }

  expect_failures = [var.noncurrent_version_expiration_days]
}

run "rejects_negative_object_expiration" {
  command = plan

  variables {
    object_expiration_days = -1
  }

  expect_failures = [var.object_expiration_days]
}

run "rejects_aws_tag_keys" {
  command = plan

  variables {
    tags = { "aws:owner" = "me" }
  }

  expect_failures = [var.tags]
}

run "rejects_bad_tracing_mode" {
  command = plan

  variables {
    tracing_mode = "On"
  }

  expect_failures = [var.tracing_mode]
}

run "rejects_non_iam_key_user" {
  command = plan

  variables {
    additional_key_user_arns = ["*"]
  }

  expect_failures = [var.additional_key_user_arns]
}

run "rejects_bad_role_path" {
  command = plan

  variables {
    iam_role_path = "service"
  }

  expect_failures = [var.iam_role_path]
}
