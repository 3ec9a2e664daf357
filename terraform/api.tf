# Optional HTTP API (payload format 2.0): `POST /memory` -> memory function, behind a JWT
# authorizer. Nothing here exists unless var.create_http_api is true.
#
# With var.create_mcp_endpoint too, three routes to the MCP function (lambda.tf), on one integration:
#   - `ANY /mcp`, MCP's streamable HTTP endpoint, behind the same JWT authorizer and scopes as
#     POST /memory (the function verifies the token again itself);
#   - `GET /.well-known/oauth-protected-resource` and `GET /.well-known/oauth-protected-resource/mcp`,
#     without authorization: the OAuth protected-resource metadata (RFC 9728) that an MCP client
#     fetches before it has a token, to find the issuer. API Gateway's own 401 carries no
#     `WWW-Authenticate: Bearer resource_metadata=...`, so clients fall back to these well-known
#     URLs. They serve a public document (the resource URL, the issuer, the scopes), never memory.

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
  integration_uri        = aws_lambda_function.this["memory"].invoke_arn
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
    destination_arn = aws_cloudwatch_log_group.this["api"].arn
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
  function_name = aws_lambda_function.this["memory"].function_name
  principal     = "apigateway.amazonaws.com"
  # Only this API's POST /memory route, on any stage.
  source_arn = "${aws_apigatewayv2_api.this[0].execution_arn}/*/POST/memory"
}

resource "aws_apigatewayv2_integration" "mcp" {
  count = local.mcp_on_api ? 1 : 0

  api_id                 = aws_apigatewayv2_api.this[0].id
  integration_type       = "AWS_PROXY"
  integration_method     = "POST"
  integration_uri        = aws_lambda_function.this["mcp"].invoke_arn
  payload_format_version = "2.0"
  timeout_milliseconds   = min(30000, var.memory_function_timeout * 1000)
}

resource "aws_apigatewayv2_route" "mcp" {
  count = local.mcp_on_api ? 1 : 0

  api_id             = aws_apigatewayv2_api.this[0].id
  route_key          = "ANY /mcp"
  target             = "integrations/${aws_apigatewayv2_integration.mcp[0].id}"
  authorization_type = "JWT"
  authorizer_id      = aws_apigatewayv2_authorizer.jwt[0].id
  # As POST /memory: the token must carry at least one of these scopes (the function checks the same).
  authorization_scopes = length(var.jwt_authorization_scopes) > 0 ? var.jwt_authorization_scopes : null
}

# The protected-resource metadata, public on purpose (see the top of this file).
resource "aws_apigatewayv2_route" "mcp_metadata" {
  #checkov:skip=CKV_AWS_309:The RFC 9728 protected-resource metadata must be readable without a token: an MCP client fetches it to find the issuer it gets its token from; it serves a public document, never memory.
  for_each = local.mcp_on_api ? local.mcp_metadata_routes : {}

  api_id             = aws_apigatewayv2_api.this[0].id
  route_key          = each.value
  target             = "integrations/${aws_apigatewayv2_integration.mcp[0].id}"
  authorization_type = "NONE"
}

resource "aws_lambda_permission" "api_mcp" {
  for_each = local.mcp_on_api ? local.mcp_permission_routes : {}

  statement_id  = "AllowHttpApiInvokeMcp${each.key}"
  action        = "lambda:InvokeFunction"
  function_name = aws_lambda_function.this["mcp"].function_name
  principal     = "apigateway.amazonaws.com"
  # Only this API's MCP routes, on any stage: any method on /mcp, GET on the two metadata paths.
  source_arn = "${aws_apigatewayv2_api.this[0].execution_arn}/*/${each.value}"
}

locals {
  mcp_metadata_routes = {
    root = "GET /.well-known/oauth-protected-resource"
    mcp  = "GET /.well-known/oauth-protected-resource/mcp"
  }

  # Execute-API ARN suffixes (after the stage) of the MCP routes: <method>/<path without its "/">.
  mcp_permission_routes = {
    Route            = "*/mcp"
    MetadataRoot     = "GET/.well-known/oauth-protected-resource"
    MetadataResource = "GET/.well-known/oauth-protected-resource/mcp"
  }
}
