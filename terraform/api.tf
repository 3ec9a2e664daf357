# Optional HTTP API (payload format 2.0): `POST /memory` -> memory function, behind a JWT
# authorizer. Nothing here exists unless var.create_http_api is true.

resource "aws_apigatewayv2_api" "this" {
  count = var.create_http_api ? 1 : 0

  name          = "${var.name_prefix}-http-api"
  description   = "s3memory memory-tool endpoint (JWT-authorized)"
  protocol_type = "HTTP"
  tags          = local.tags

  lifecycle {
    precondition {
      condition     = var.jwt_issuer != null && length(var.jwt_audience) > 0
      error_message = "create_http_api = true needs jwt_issuer and a non-empty jwt_audience: the route is never exposed without authorization."
    }
  }
}

resource "aws_apigatewayv2_authorizer" "jwt" {
  count = var.create_http_api ? 1 : 0

  api_id           = aws_apigatewayv2_api.this[0].id
  name             = "${var.name_prefix}-jwt"
  authorizer_type  = "JWT"
  identity_sources = ["$request.header.Authorization"]

  jwt_configuration {
    issuer   = var.jwt_issuer
    audience = var.jwt_audience
  }
}

resource "aws_apigatewayv2_integration" "memory" {
  count = var.create_http_api ? 1 : 0

  api_id                 = aws_apigatewayv2_api.this[0].id
  integration_type       = "AWS_PROXY"
  integration_method     = "POST"
  integration_uri        = aws_lambda_function.memory.invoke_arn
  payload_format_version = "2.0"
  timeout_milliseconds   = min(30000, var.memory_function_timeout * 1000)
}

resource "aws_apigatewayv2_route" "memory" {
  count = var.create_http_api ? 1 : 0

  api_id             = aws_apigatewayv2_api.this[0].id
  route_key          = "POST /memory"
  target             = "integrations/${aws_apigatewayv2_integration.memory[0].id}"
  authorization_type = "JWT"
  authorizer_id      = aws_apigatewayv2_authorizer.jwt[0].id
  # The token must carry at least one of these scopes (the function checks the same).
  authorization_scopes = length(var.jwt_authorization_scopes) > 0 ? var.jwt_authorization_scopes : null
}

resource "aws_apigatewayv2_stage" "default" {
  count = var.create_http_api ? 1 : 0

  api_id      = aws_apigatewayv2_api.this[0].id
  name        = "$default"
  auto_deploy = true
  tags        = local.tags

  default_route_settings {
    throttling_burst_limit = var.api_throttling_burst_limit
    throttling_rate_limit  = var.api_throttling_rate_limit
  }

  access_log_settings {
    destination_arn = aws_cloudwatch_log_group.api[0].arn
    format = jsonencode({
      requestId          = "$context.requestId"
      requestTime        = "$context.requestTime"
      sourceIp           = "$context.identity.sourceIp"
      routeKey           = "$context.routeKey"
      status             = "$context.status"
      responseLength     = "$context.responseLength"
      integrationStatus  = "$context.integrationStatus"
      integrationLatency = "$context.integrationLatency"
      authorizerError    = "$context.authorizer.error"
      subject            = "$context.authorizer.claims.sub"
    })
  }
}

resource "aws_lambda_permission" "api_memory" {
  count = var.create_http_api ? 1 : 0

  statement_id  = "AllowHttpApiInvokeMemory"
  action        = "lambda:InvokeFunction"
  function_name = aws_lambda_function.memory.function_name
  principal     = "apigateway.amazonaws.com"
  # Only this API's POST /memory route, on any stage.
  source_arn = "${aws_apigatewayv2_api.this[0].execution_arn}/*/POST/memory"
}
