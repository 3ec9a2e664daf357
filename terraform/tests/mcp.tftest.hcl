# The optional MCP endpoint on the HTTP API (create_mcp_endpoint): off by default; on, a function of
# its own from the same zip, behind `ANY /mcp` with the JWT authorizer, and the protected-resource
# metadata routes without one; its role, log group and key grants; S3MEMORY_MCP_URL; refused without
# the HTTP API.

mock_provider "aws" {
  source = "./tests/mocks"
}

variables {
  bucket_name     = "s3memory-test-bucket"
  lambda_zip_path = "tests/fixtures/lambda.zip"
}

run "off_by_default" {
  command = plan

  assert {
    condition = (
      !contains(keys(aws_lambda_function.this), "mcp") &&
      !contains(keys(aws_iam_role.this), "mcp") &&
      !contains(keys(aws_iam_role_policy.this), "mcp") &&
      !contains(keys(aws_cloudwatch_log_group.this), "mcp") &&
      length(aws_apigatewayv2_integration.mcp) == 0 &&
      length(aws_apigatewayv2_route.mcp) == 0 &&
      length(aws_apigatewayv2_route.mcp_metadata) == 0 &&
      length(aws_lambda_permission.api_mcp) == 0
    )
    error_message = "Nothing of the MCP endpoint exists unless create_mcp_endpoint is true."
  }

  assert {
    condition = (
      output.mcp_url == null && output.mcp_function_name == null && output.mcp_function_arn == null &&
      output.log_group_names.mcp == null
    )
    error_message = "The MCP outputs are null when the endpoint is off."
  }
}

run "off_with_the_http_api" {
  command = apply

  variables {
    create_http_api = true
    jwt_issuer      = "https://issuer.example.com"
    jwt_audience    = ["s3memory-client"]
    mcp_url         = "https://memory.example.com/mcp" # alone, it turns nothing on
  }

  assert {
    condition = (
      !contains(keys(aws_lambda_function.this), "mcp") &&
      length(aws_apigatewayv2_integration.mcp) == 0 &&
      length(aws_apigatewayv2_route.mcp) == 0 &&
      length(aws_apigatewayv2_route.mcp_metadata) == 0 &&
      length(aws_lambda_permission.api_mcp) == 0 &&
      output.mcp_url == null
    )
    error_message = "The HTTP API alone has no MCP function, integration, route or permission."
  }

  assert {
    condition = alltrue([
      for statement in jsondecode(aws_kms_key.memory[0].policy).Statement :
      !strcontains(jsonencode(statement), "s3memory-mcp")
    ])
    error_message = "Without the MCP endpoint, the key policy names neither an MCP role nor an MCP log group."
  }
}

run "on" {
  command = apply

  variables {
    create_http_api          = true
    create_mcp_endpoint      = true
    jwt_issuer               = "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_EXAMPLE"
    jwt_audience             = ["s3memory-client", "claude-code"]
    jwt_authorization_scopes = ["memory/read", "memory/write"]
    memory_quota_files       = 100
  }

  # The function: the memory function's zip, runtime, architecture, timeout, logging and tracing;
  # its own role, memory size and reserved concurrency.
  assert {
    condition = (
      aws_lambda_function.this["mcp"].function_name == "s3memory-mcp" &&
      aws_lambda_function.this["mcp"].handler == "s3memory.aws_lambda.mcp_handler" &&
      aws_lambda_function.this["mcp"].role == aws_iam_role.this["mcp"].arn &&
      aws_lambda_function.this["mcp"].runtime == aws_lambda_function.this["memory"].runtime &&
      aws_lambda_function.this["mcp"].architectures == aws_lambda_function.this["memory"].architectures &&
      aws_lambda_function.this["mcp"].filename == aws_lambda_function.this["memory"].filename &&
      aws_lambda_function.this["mcp"].source_code_hash == aws_lambda_function.this["memory"].source_code_hash &&
      aws_lambda_function.this["mcp"].timeout == 30 &&
      aws_lambda_function.this["mcp"].memory_size == 512 &&
      aws_lambda_function.this["mcp"].reserved_concurrent_executions == null &&
      aws_lambda_function.this["mcp"].tracing_config[0].mode == "PassThrough" &&
      aws_lambda_function.this["mcp"].tags["s3memory:module"] == "s3memory"
    )
    error_message = "The MCP function: its handler and role, the memory function's zip, runtime, architecture and timeout, 512 MB, unreserved."
  }

  assert {
    condition = (
      aws_lambda_function.this["mcp"].logging_config[0].log_format == "JSON" &&
      aws_lambda_function.this["mcp"].logging_config[0].application_log_level == "INFO" &&
      aws_lambda_function.this["mcp"].logging_config[0].system_log_level == "WARN"
    )
    error_message = "The MCP function logs as the memory function does (JSON, application INFO, system WARN)."
  }

  # The memory function's environment (the store, the limits, the token check), without
  # S3MEMORY_DIRECT_INVOCATION, with the route's public URL.
  assert {
    condition = aws_lambda_function.this["mcp"].environment[0].variables == tomap({
      S3MEMORY_BUCKET         = "s3memory-test-bucket"
      S3MEMORY_PREFIX         = "users/"
      S3MEMORY_KMS_KEY_ID     = aws_kms_key.memory[0].arn
      S3MEMORY_STORAGE_FORMAT = "2"
      S3MEMORY_STORE_ID       = "s3memory-test-bucket"
      S3MEMORY_QUOTA_FILES    = "100"
      S3MEMORY_JWT_ISSUER     = "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_EXAMPLE"
      S3MEMORY_JWT_AUDIENCE   = "s3memory-client,claude-code"
      S3MEMORY_JWT_SCOPES     = "memory/read memory/write"
      S3MEMORY_MCP_URL        = "https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com/mcp"
    })
    error_message = "The MCP function's environment is exactly the memory function's store, limits and token check, and S3MEMORY_MCP_URL = <api_endpoint>/mcp."
  }

  assert {
    condition = (
      { for name, value in aws_lambda_function.this["mcp"].environment[0].variables : name => value if name != "S3MEMORY_MCP_URL" } ==
      { for name, value in aws_lambda_function.this["memory"].environment[0].variables : name => value if name != "S3MEMORY_DIRECT_INVOCATION" }
    )
    error_message = "The MCP function's environment is the memory function's, but for S3MEMORY_DIRECT_INVOCATION and S3MEMORY_MCP_URL."
  }

  # The routes: /mcp behind the JWT authorizer and POST /memory's scopes; the metadata without.
  assert {
    condition = (
      aws_apigatewayv2_route.mcp[0].route_key == "ANY /mcp" &&
      aws_apigatewayv2_route.mcp[0].authorization_type == "JWT" &&
      aws_apigatewayv2_route.mcp[0].authorizer_id == aws_apigatewayv2_authorizer.jwt[0].id &&
      aws_apigatewayv2_route.mcp[0].authorization_scopes == toset(["memory/read", "memory/write"]) &&
      aws_apigatewayv2_route.mcp[0].authorization_scopes == aws_apigatewayv2_route.memory[0].authorization_scopes &&
      aws_apigatewayv2_route.mcp[0].target == "integrations/${aws_apigatewayv2_integration.mcp[0].id}"
    )
    error_message = "ANY /mcp goes to the MCP integration behind the JWT authorizer, with the scopes of POST /memory."
  }

  assert {
    condition = (
      toset([for route in aws_apigatewayv2_route.mcp_metadata : route.route_key]) == toset([
        "GET /.well-known/oauth-protected-resource",
        "GET /.well-known/oauth-protected-resource/mcp",
      ]) &&
      alltrue([
        for route in aws_apigatewayv2_route.mcp_metadata :
        route.authorization_type == "NONE" && route.authorizer_id == null &&
        route.target == "integrations/${aws_apigatewayv2_integration.mcp[0].id}" &&
        route.api_id == aws_apigatewayv2_api.this[0].id
      ])
    )
    error_message = "The two protected-resource metadata routes are GET only, without authorization, to the MCP integration."
  }

  assert {
    condition = (
      aws_apigatewayv2_integration.mcp[0].integration_type == "AWS_PROXY" &&
      aws_apigatewayv2_integration.mcp[0].integration_method == "POST" &&
      aws_apigatewayv2_integration.mcp[0].payload_format_version == "2.0" &&
      aws_apigatewayv2_integration.mcp[0].integration_uri == aws_lambda_function.this["mcp"].invoke_arn &&
      aws_apigatewayv2_integration.mcp[0].integration_uri == "arn:aws:apigateway:eu-west-1:lambda:path/2015-03-31/functions/arn:aws:lambda:eu-west-1:123456789012:function:s3memory-mcp/invocations" &&
      aws_apigatewayv2_integration.mcp[0].timeout_milliseconds == aws_apigatewayv2_integration.memory[0].timeout_milliseconds
    )
    error_message = "The MCP integration proxies to the MCP function (payload 2.0), with the memory integration's timeout."
  }

  # API Gateway may invoke the MCP function for exactly these routes of this API.
  assert {
    condition = (
      toset([for permission in aws_lambda_permission.api_mcp : permission.source_arn]) == toset([
        "arn:aws:execute-api:eu-west-1:123456789012:a1b2c3d4e5/*/*/mcp",
        "arn:aws:execute-api:eu-west-1:123456789012:a1b2c3d4e5/*/GET/.well-known/oauth-protected-resource",
        "arn:aws:execute-api:eu-west-1:123456789012:a1b2c3d4e5/*/GET/.well-known/oauth-protected-resource/mcp",
      ]) &&
      alltrue([
        for permission in aws_lambda_permission.api_mcp :
        permission.function_name == aws_lambda_function.this["mcp"].function_name &&
        permission.principal == "apigateway.amazonaws.com" &&
        permission.action == "lambda:InvokeFunction"
      ]) &&
      length(distinct([for permission in aws_lambda_permission.api_mcp : permission.statement_id])) == 3
    )
    error_message = "API Gateway may invoke the MCP function only for this API's /mcp (any method) and the two metadata paths (GET)."
  }

  assert {
    condition = (
      aws_apigatewayv2_route.memory[0].route_key == "POST /memory" &&
      aws_apigatewayv2_integration.memory[0].integration_uri == aws_lambda_function.this["memory"].invoke_arn &&
      aws_lambda_permission.api_memory[0].source_arn == "arn:aws:execute-api:eu-west-1:123456789012:a1b2c3d4e5/*/POST/memory" &&
      aws_lambda_function.this["memory"].environment[0].variables["S3MEMORY_DIRECT_INVOCATION"] == "refuse"
    )
    error_message = "The MCP endpoint leaves POST /memory and the memory function as they are."
  }

  # Its role: assumed by Lambda; the memory role's statements, but its own log group.
  assert {
    condition = (
      aws_iam_role.this["mcp"].name == "s3memory-mcp-lambda" &&
      aws_iam_role.this["mcp"].path == "/" &&
      jsondecode(aws_iam_role.this["mcp"].assume_role_policy) == jsondecode(aws_iam_role.this["memory"].assume_role_policy) &&
      aws_iam_role_policy.this["mcp"].role == aws_iam_role.this["mcp"].id
    )
    error_message = "The MCP role is <name_prefix>-mcp-lambda, assumed by Lambda like the other execution roles, with its inline policy."
  }

  assert {
    condition = (
      [for statement in jsondecode(aws_iam_role_policy.this["mcp"].policy).Statement : statement if statement.Sid != "OwnLogGroup"] ==
      [for statement in jsondecode(aws_iam_role_policy.this["memory"].policy).Statement : statement if statement.Sid != "OwnLogGroup"] &&
      length(jsondecode(aws_iam_role_policy.this["mcp"].policy).Statement) == length(jsondecode(aws_iam_role_policy.this["memory"].policy).Statement)
    )
    error_message = "The MCP role may do on the bucket and the key exactly what the memory role may."
  }

  assert {
    condition = [
      for statement in jsondecode(aws_iam_role_policy.this["mcp"].policy).Statement : statement.Resource if statement.Sid == "OwnLogGroup"
    ] == ["arn:aws:logs:eu-west-1:123456789012:log-group:/aws/lambda/s3memory-mcp:*"]
    error_message = "The MCP role writes only to its own log group."
  }

  assert {
    condition = (
      aws_cloudwatch_log_group.this["mcp"].name == "/aws/lambda/s3memory-mcp" &&
      aws_cloudwatch_log_group.this["mcp"].retention_in_days == aws_cloudwatch_log_group.this["memory"].retention_in_days &&
      aws_cloudwatch_log_group.this["mcp"].kms_key_id == aws_kms_key.memory[0].arn &&
      output.log_group_names.mcp == "/aws/lambda/s3memory-mcp"
    )
    error_message = "The MCP function has its own log group, with the others' retention and encryption."
  }

  # The key: the MCP role is a key user as the memory role is; CloudWatch Logs may use the key for
  # its log group.
  assert {
    condition = alltrue([
      for sid in ["EnvelopeKeysWithS3memoryContext", "BucketSseViaS3"] : anytrue([
        for statement in jsondecode(aws_kms_key.memory[0].policy).Statement :
        statement.Sid == sid && try(
          contains(statement.Principal.AWS, "arn:aws:iam::123456789012:role/s3memory-mcp-lambda") &&
          contains(statement.Principal.AWS, "arn:aws:iam::123456789012:role/s3memory-memory-lambda"),
          false,
        )
      ])
    ])
    error_message = "The key policy lets the MCP role use the key under the same conditions as the memory role."
  }

  assert {
    condition = anytrue([
      for statement in jsondecode(aws_kms_key.memory[0].policy).Statement :
      statement.Sid == "CloudWatchLogsForModuleLogGroups" && try(contains(
        statement.Condition.ArnEquals["kms:EncryptionContext:aws:logs:arn"],
        "arn:aws:logs:eu-west-1:123456789012:log-group:/aws/lambda/s3memory-mcp",
      ), false)
    ])
    error_message = "CloudWatch Logs may use the key for the MCP function's log group."
  }

  assert {
    condition = (
      output.mcp_url == "https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com/mcp" &&
      output.mcp_function_name == "s3memory-mcp" &&
      output.mcp_function_arn == "arn:aws:lambda:eu-west-1:123456789012:function:s3memory-mcp"
    )
    error_message = "The MCP outputs: the URL clients connect to, the function's name and ARN."
  }
}

run "custom_domain_and_sizes" {
  command = apply

  variables {
    create_http_api                   = true
    create_mcp_endpoint               = true
    jwt_issuer                        = "https://issuer.example.com"
    jwt_audience                      = ["s3memory-client"]
    mcp_url                           = "https://memory.example.com/mcp"
    mcp_function_memory_size          = 1024
    mcp_function_reserved_concurrency = 3
    memory_function_timeout           = 45
  }

  assert {
    condition = (
      aws_lambda_function.this["mcp"].environment[0].variables["S3MEMORY_MCP_URL"] == "https://memory.example.com/mcp" &&
      output.mcp_url == "https://memory.example.com/mcp"
    )
    error_message = "mcp_url, when set, is the function's S3MEMORY_MCP_URL and the mcp_url output."
  }

  assert {
    condition = (
      aws_lambda_function.this["mcp"].memory_size == 1024 &&
      aws_lambda_function.this["mcp"].reserved_concurrent_executions == 3 &&
      aws_lambda_function.this["mcp"].timeout == 45 &&
      aws_apigatewayv2_integration.mcp[0].timeout_milliseconds == 30000
    )
    error_message = "The MCP function's memory size and reserved concurrency are its own variables; its timeout is the memory function's, the integration's at most API Gateway's 30 s."
  }

  assert {
    condition     = aws_apigatewayv2_route.mcp[0].authorization_scopes == null
    error_message = "Without jwt_authorization_scopes, /mcp requires no scope, as POST /memory."
  }
}

run "disabled" {
  command = plan

  variables {
    create_http_api                   = true
    create_mcp_endpoint               = true
    jwt_issuer                        = "https://issuer.example.com"
    jwt_audience                      = ["s3memory-client"]
    mcp_function_reserved_concurrency = 0
  }

  # null (the default, run "on") leaves the argument unset (the mocked provider plans null): the AWS
  # provider's default, -1, unreserved. 0 reserves nothing: the function is throttled.
  assert {
    condition     = aws_lambda_function.this["mcp"].reserved_concurrent_executions == 0
    error_message = "mcp_function_reserved_concurrency = 0 disables the MCP function."
  }
}

run "refused_without_the_http_api" {
  command = plan

  variables {
    create_mcp_endpoint = true
  }

  expect_failures = [aws_lambda_function.this["mcp"]]
}

run "rejects_bad_mcp_settings" {
  command = plan

  variables {
    mcp_url                           = "http://memory.example.com/mcp" # not https
    mcp_function_memory_size          = 64
    mcp_function_reserved_concurrency = -1 # null is unreserved
  }

  expect_failures = [
    var.mcp_url,
    var.mcp_function_memory_size,
    var.mcp_function_reserved_concurrency,
  ]
}

run "rejects_an_mcp_url_with_a_query" {
  command = plan

  variables {
    mcp_url                           = "https://memory.example.com/mcp?x=1"
    mcp_function_reserved_concurrency = 2.5
  }

  expect_failures = [var.mcp_url, var.mcp_function_reserved_concurrency]
}
