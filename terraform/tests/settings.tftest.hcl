# Limits, content guard, direct invocation, JWT verification, logging and concurrency: each setting
# reaches the functions' environment (only when it differs from the function's default) and the
# route, and the deployment shapes hold (an HTTP-fronted memory function refuses direct events).

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

run "defaults_keep_the_environment_minimal" {
  command = plan

  assert {
    condition = toset(keys(aws_lambda_function.this["memory"].environment[0].variables)) == toset([
      "S3MEMORY_BUCKET", "S3MEMORY_PREFIX", "S3MEMORY_KMS_KEY_ID", "S3MEMORY_STORAGE_FORMAT", "S3MEMORY_STORE_ID",
      "S3MEMORY_DIRECT_INVOCATION",
    ])
    error_message = "By default the memory function gets the storage variables (format 2: the format and the store's id) and S3MEMORY_DIRECT_INVOCATION only."
  }

  assert {
    condition = toset(keys(aws_lambda_function.this["agent"].environment[0].variables)) == toset([
      "S3MEMORY_BUCKET", "S3MEMORY_PREFIX", "S3MEMORY_KMS_KEY_ID", "S3MEMORY_STORAGE_FORMAT", "S3MEMORY_STORE_ID",
      "S3MEMORY_MODEL", "ANTHROPIC_API_KEY_SECRET_ARN",
    ])
    error_message = "By default the agent function gets the storage variables (format 2: the format and the store's id), S3MEMORY_MODEL and its secret's ARN only (it is direct-invoked by design)."
  }

  assert {
    condition     = aws_lambda_function.this["memory"].environment[0].variables["S3MEMORY_DIRECT_INVOCATION"] == "allow"
    error_message = "Without the HTTP API the memory function serves direct invocations."
  }

  assert {
    condition = alltrue([
      for fn in [aws_lambda_function.this["memory"], aws_lambda_function.this["agent"]] :
      fn.logging_config[0].log_format == "JSON" &&
      fn.logging_config[0].application_log_level == "INFO" &&
      fn.logging_config[0].system_log_level == "WARN"
    ])
    error_message = "Both functions log JSON, application level INFO (the per-invocation record), system level WARN."
  }

  assert {
    condition = (
      aws_lambda_function.this["memory"].reserved_concurrent_executions == null &&
      aws_lambda_function.this["agent"].reserved_concurrent_executions == null
    )
    error_message = "Reserved concurrency is unset by default (the provider's -1: the account's unreserved pool), so apply works on accounts with a low concurrency limit."
  }
}

run "limits_and_guard_reach_both_functions" {
  command = plan

  variables {
    memory_quota_bytes = 50000000000
    memory_quota_files = 200
    content_guard_mode = "redact"
    max_file_bytes     = 4194304
    log_level          = "DEBUG"
  }

  assert {
    condition = alltrue([
      for fn in [aws_lambda_function.this["memory"], aws_lambda_function.this["agent"]] :
      fn.environment[0].variables["S3MEMORY_QUOTA_BYTES"] == "50000000000" &&
      fn.environment[0].variables["S3MEMORY_QUOTA_FILES"] == "200" &&
      fn.environment[0].variables["S3MEMORY_GUARD"] == "redact" &&
      fn.environment[0].variables["S3MEMORY_MAX_FILE_BYTES"] == "4194304"
    ])
    error_message = "Quota, guard and file-size settings reach both functions as whole-number strings."
  }

  assert {
    condition = alltrue([
      for fn in [aws_lambda_function.this["memory"], aws_lambda_function.this["agent"]] :
      fn.logging_config[0].application_log_level == "DEBUG"
    ])
    error_message = "log_level sets both functions' application log level."
  }
}

run "smallest_limits_and_guard_off" {
  command = plan

  variables {
    memory_quota_bytes = 1
    memory_quota_files = 1
    content_guard_mode = "off"
    max_file_bytes     = 1
    log_level          = "TRACE"
  }

  assert {
    condition = alltrue([
      for fn in [aws_lambda_function.this["memory"], aws_lambda_function.this["agent"]] :
      fn.environment[0].variables["S3MEMORY_QUOTA_BYTES"] == "1" &&
      fn.environment[0].variables["S3MEMORY_QUOTA_FILES"] == "1" &&
      fn.environment[0].variables["S3MEMORY_GUARD"] == "off" &&
      fn.environment[0].variables["S3MEMORY_MAX_FILE_BYTES"] == "1"
    ])
    error_message = "The smallest limits and guard off are accepted and passed on."
  }
}

run "http_api_fronted_function_refuses_direct_events_and_verifies_jwt" {
  command = plan

  variables {
    create_http_api          = true
    jwt_issuer               = "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_EXAMPLE"
    jwt_audience             = ["client-a", "client-b"]
    jwt_authorization_scopes = ["memory/read", "memory/write"]
  }

  assert {
    condition = (
      aws_lambda_function.this["memory"].environment[0].variables["S3MEMORY_DIRECT_INVOCATION"] == "refuse" &&
      aws_lambda_function.this["memory"].environment[0].variables["S3MEMORY_JWT_ISSUER"] == "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_EXAMPLE" &&
      aws_lambda_function.this["memory"].environment[0].variables["S3MEMORY_JWT_AUDIENCE"] == "client-a,client-b" &&
      aws_lambda_function.this["memory"].environment[0].variables["S3MEMORY_JWT_SCOPES"] == "memory/read memory/write"
    )
    error_message = "Behind the HTTP API the memory function refuses direct events and verifies the JWT itself (issuer, audiences, scopes)."
  }

  assert {
    condition     = aws_apigatewayv2_route.memory[0].authorization_scopes == toset(["memory/read", "memory/write"])
    error_message = "jwt_authorization_scopes are the route's authorization scopes."
  }

  assert {
    condition = length([
      for name in keys(aws_lambda_function.this["agent"].environment[0].variables) : name
      if startswith(name, "S3MEMORY_JWT_") || name == "S3MEMORY_DIRECT_INVOCATION"
    ]) == 0
    error_message = "The agent function gets no JWT or direct-invocation setting: it is not behind the API."
  }
}

run "http_api_without_scopes" {
  command = plan

  variables {
    create_http_api = true
    jwt_issuer      = "https://issuer.example.com/"
    jwt_audience    = ["client-a"]
  }

  assert {
    condition = (
      aws_lambda_function.this["memory"].environment[0].variables["S3MEMORY_JWT_AUDIENCE"] == "client-a" &&
      !contains(keys(aws_lambda_function.this["memory"].environment[0].variables), "S3MEMORY_JWT_SCOPES") &&
      try(length(aws_apigatewayv2_route.memory[0].authorization_scopes), 0) == 0
    )
    error_message = "Without jwt_authorization_scopes neither the route nor the function requires a scope."
  }
}

run "http_api_with_direct_invocation_allowed" {
  command = plan

  variables {
    create_http_api                         = true
    jwt_issuer                              = "https://issuer.example.com/"
    jwt_audience                            = ["client-a"]
    memory_function_allow_direct_invocation = true
  }

  assert {
    condition = (
      aws_lambda_function.this["memory"].environment[0].variables["S3MEMORY_DIRECT_INVOCATION"] == "allow" &&
      aws_lambda_function.this["memory"].environment[0].variables["S3MEMORY_JWT_ISSUER"] == "https://issuer.example.com/"
    )
    error_message = "memory_function_allow_direct_invocation = true serves direct events beside the API (HTTP events are still verified)."
  }
}

run "direct_invocation_refused_without_api" {
  command = plan

  variables {
    memory_function_allow_direct_invocation = false
    jwt_authorization_scopes                = ["memory/read"]
  }

  assert {
    condition = (
      aws_lambda_function.this["memory"].environment[0].variables["S3MEMORY_DIRECT_INVOCATION"] == "refuse" &&
      length([for name in keys(aws_lambda_function.this["memory"].environment[0].variables) : name if startswith(name, "S3MEMORY_JWT_")]) == 0
    )
    error_message = "memory_function_allow_direct_invocation = false refuses direct events; without the API no JWT setting is passed."
  }
}

# Reserved concurrency: null (the default, above) leaves each function unreserved; 0 disables it; a
# whole number reserves that many (and is its ceiling). -1, accepted before, is refused (null says it).
run "reserved_concurrency_zero_disables" {
  command = plan

  variables {
    memory_function_reserved_concurrency = 0
    agent_function_reserved_concurrency  = 0
  }

  assert {
    condition = (
      aws_lambda_function.this["memory"].reserved_concurrent_executions == 0 &&
      aws_lambda_function.this["agent"].reserved_concurrent_executions == 0
    )
    error_message = "0 reserves nothing and so disables the functions."
  }
}

run "reserved_concurrency_whole_number_reserves" {
  command = plan

  variables {
    memory_function_reserved_concurrency = 100
    agent_function_reserved_concurrency  = 10
  }

  assert {
    condition = (
      aws_lambda_function.this["memory"].reserved_concurrent_executions == 100 &&
      aws_lambda_function.this["agent"].reserved_concurrent_executions == 10
    )
    error_message = "A whole number is reserved (and the function's ceiling)."
  }
}

run "reserved_concurrency_refuses_minus_one_and_fractions" {
  command = plan

  variables {
    memory_function_reserved_concurrency = -1
    agent_function_reserved_concurrency  = 0.5
  }

  expect_failures = [
    var.memory_function_reserved_concurrency,
    var.agent_function_reserved_concurrency,
  ]
}
