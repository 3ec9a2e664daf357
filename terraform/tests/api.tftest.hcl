# The optional HTTP API: present only when enabled, JWT-protected, wired to the memory function.

mock_provider "aws" {
  source = "./tests/mocks"
}

variables {
  bucket_name     = "s3memory-test-bucket"
  lambda_zip_path = "tests/fixtures/lambda.zip"
}

run "api_disabled_by_default" {
  command = plan

  assert {
    condition     = length(aws_apigatewayv2_api.this) == 0 && length(aws_apigatewayv2_stage.default) == 0
    error_message = "The HTTP API must not be created unless create_http_api is true."
  }
}

run "api_enabled" {
  command = apply

  variables {
    create_http_api = true
    jwt_issuer      = "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_EXAMPLE"
    jwt_audience    = ["s3memory-client"]
  }

  assert {
    condition     = length(aws_apigatewayv2_api.this) == 1 && aws_apigatewayv2_api.this[0].protocol_type == "HTTP"
    error_message = "create_http_api = true must create one HTTP API."
  }

  assert {
    condition = (
      aws_apigatewayv2_route.memory[0].route_key == "POST /memory" &&
      aws_apigatewayv2_route.memory[0].authorization_type == "JWT" &&
      aws_apigatewayv2_route.memory[0].authorizer_id == aws_apigatewayv2_authorizer.jwt[0].id
    )
    error_message = "POST /memory must be protected by the JWT authorizer."
  }

  assert {
    condition = (
      aws_apigatewayv2_authorizer.jwt[0].authorizer_type == "JWT" &&
      aws_apigatewayv2_authorizer.jwt[0].jwt_configuration[0].issuer == "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_EXAMPLE" &&
      aws_apigatewayv2_authorizer.jwt[0].jwt_configuration[0].audience == toset(["s3memory-client"])
    )
    error_message = "The JWT authorizer must use jwt_issuer and jwt_audience."
  }

  assert {
    condition = (
      aws_apigatewayv2_integration.memory[0].integration_type == "AWS_PROXY" &&
      aws_apigatewayv2_integration.memory[0].payload_format_version == "2.0" &&
      aws_apigatewayv2_integration.memory[0].integration_uri == aws_lambda_function.this["memory"].invoke_arn
    )
    error_message = "The route must proxy to the memory function with payload format 2.0."
  }

  assert {
    condition = (
      aws_lambda_permission.api_memory[0].function_name == aws_lambda_function.this["memory"].function_name &&
      aws_lambda_permission.api_memory[0].principal == "apigateway.amazonaws.com" &&
      aws_lambda_permission.api_memory[0].source_arn == "arn:aws:execute-api:eu-west-1:123456789012:a1b2c3d4e5/*/POST/memory"
    )
    error_message = "API Gateway may invoke the memory function only for this API's POST /memory."
  }

  assert {
    condition     = aws_apigatewayv2_stage.default[0].name == "$default" && aws_apigatewayv2_stage.default[0].access_log_settings[0].destination_arn == aws_cloudwatch_log_group.this["api"].arn
    error_message = "The default stage must write access logs to the module's API log group."
  }

  assert {
    condition     = output.api_endpoint == "https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com"
    error_message = "api_endpoint must be the API's endpoint when enabled."
  }

  assert {
    condition = anytrue([
      for statement in jsondecode(aws_kms_key.memory[0].policy).Statement :
      statement.Sid == "CloudWatchLogsForModuleLogGroups" && try(contains(
        statement.Condition.ArnEquals["kms:EncryptionContext:aws:logs:arn"],
        "arn:aws:logs:eu-west-1:123456789012:log-group:/aws/apigateway/s3memory-http-api",
      ), false)
    ])
    error_message = "CloudWatch Logs may use the key for the API's log group."
  }
}

run "api_requires_jwt_settings" {
  command = plan

  variables {
    create_http_api = true
  }

  expect_failures = [aws_apigatewayv2_api.this]
}

run "api_requires_audience" {
  command = plan

  variables {
    create_http_api = true
    jwt_issuer      = "https://issuer.example.com/"
  }

  expect_failures = [aws_apigatewayv2_api.this]
}
