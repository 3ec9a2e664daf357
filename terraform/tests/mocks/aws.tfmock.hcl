# Shared mock data for the AWS provider in every *.tftest.hcl file (mock_provider "aws" { source = ... }).
# Data sources get a fixed account, region and partition so that ARNs built from them are
# predictable; resources whose computed ARNs are passed to other resources get realistic ARNs,
# because the provider validates ARN-shaped arguments even when mocked.

# Terraform runs in an assumed-role session; the session context resolves it to its role (with the
# role's path), which is the default key administrator.
mock_data "aws_caller_identity" {
  defaults = {
    account_id = "123456789012"
    arn        = "arn:aws:sts::123456789012:assumed-role/terraform-deployer/ci-session"
    user_id    = "AROATERRAFORMTEST:ci-session"
  }
}

mock_data "aws_iam_session_context" {
  defaults = {
    issuer_arn   = "arn:aws:iam::123456789012:role/ci/terraform-deployer"
    issuer_id    = "AROATERRAFORMTEST"
    issuer_name  = "terraform-deployer"
    session_name = "ci-session"
  }
}

mock_data "aws_region" {
  defaults = {
    name = "eu-west-1"
  }
}

mock_data "aws_partition" {
  defaults = {
    partition  = "aws"
    dns_suffix = "amazonaws.com"
  }
}

override_resource {
  target = aws_iam_role.this["memory"]
  values = { arn = "arn:aws:iam::123456789012:role/s3memory-memory-lambda" }
}

override_resource {
  target = aws_iam_role.this["agent"]
  values = { arn = "arn:aws:iam::123456789012:role/s3memory-agent-lambda" }
}

override_resource {
  target = aws_iam_role.operator
  values = { arn = "arn:aws:iam::123456789012:role/s3memory-operator" }
}

override_resource {
  target = aws_iam_role.this["expiry"]
  values = { arn = "arn:aws:iam::123456789012:role/s3memory-expiry-lambda" }
}

override_resource {
  target = aws_iam_role.expiry_scheduler
  values = { arn = "arn:aws:iam::123456789012:role/s3memory-expiry-scheduler" }
}

override_resource {
  target = aws_kms_key.memory
  values = {
    arn    = "arn:aws:kms:eu-west-1:123456789012:key/11111111-2222-3333-4444-555555555555"
    key_id = "11111111-2222-3333-4444-555555555555"
  }
}

override_resource {
  target = aws_lambda_function.this["memory"]
  values = {
    arn        = "arn:aws:lambda:eu-west-1:123456789012:function:s3memory-memory"
    invoke_arn = "arn:aws:apigateway:eu-west-1:lambda:path/2015-03-31/functions/arn:aws:lambda:eu-west-1:123456789012:function:s3memory-memory/invocations"
  }
}

override_resource {
  target = aws_lambda_function.this["agent"]
  values = {
    arn        = "arn:aws:lambda:eu-west-1:123456789012:function:s3memory-agent"
    invoke_arn = "arn:aws:apigateway:eu-west-1:lambda:path/2015-03-31/functions/arn:aws:lambda:eu-west-1:123456789012:function:s3memory-agent/invocations"
  }
}

override_resource {
  target = aws_lambda_function.this["expiry"]
  values = {
    arn        = "arn:aws:lambda:eu-west-1:123456789012:function:s3memory-expiry"
    invoke_arn = "arn:aws:apigateway:eu-west-1:lambda:path/2015-03-31/functions/arn:aws:lambda:eu-west-1:123456789012:function:s3memory-expiry/invocations"
  }
}

override_resource {
  target = aws_cloudwatch_log_group.this["api"]
  values = { arn = "arn:aws:logs:eu-west-1:123456789012:log-group:/aws/apigateway/s3memory-http-api" }
}

override_resource {
  target = aws_apigatewayv2_api.this
  values = {
    id            = "a1b2c3d4e5"
    api_endpoint  = "https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com"
    execution_arn = "arn:aws:execute-api:eu-west-1:123456789012:a1b2c3d4e5"
  }
}

override_resource {
  target = aws_iam_role.this["mcp"]
  values = { arn = "arn:aws:iam::123456789012:role/s3memory-mcp-lambda" }
}

override_resource {
  target = aws_lambda_function.this["mcp"]
  values = {
    arn        = "arn:aws:lambda:eu-west-1:123456789012:function:s3memory-mcp"
    invoke_arn = "arn:aws:apigateway:eu-west-1:lambda:path/2015-03-31/functions/arn:aws:lambda:eu-west-1:123456789012:function:s3memory-mcp/invocations"
  }
}
