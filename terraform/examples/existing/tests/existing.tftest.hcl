# The example as written, against a mocked AWS provider (the module's mock data): it plans and
# applies on a bucket and a key of one's own with the memory function only, and plans behind an
# identity provider, in a VPC, with a dead-letter queue. The module's tests/existing.tftest.hcl
# checks the resources and grants in detail; this checks what the example gives its operator.

mock_provider "aws" {
  source = "../../tests/mocks"
}

# The roles' and the function's ARNs, which the provider validates where they are passed on.
override_resource {
  target = module.s3memory.aws_iam_role.this["memory"]
  values = { arn = "arn:aws:iam::123456789012:role/s3memory-memory-lambda" }
}

override_resource {
  target = module.s3memory.aws_lambda_function.this["memory"]
  values = {
    arn        = "arn:aws:lambda:eu-west-1:123456789012:function:s3memory-memory"
    invoke_arn = "arn:aws:apigateway:eu-west-1:lambda:path/2015-03-31/functions/arn:aws:lambda:eu-west-1:123456789012:function:s3memory-memory/invocations"
  }
}

variables {
  bucket_name     = "team-agent-memory"
  kms_key_arn     = "arn:aws:kms:eu-west-1:123456789012:key/11111111-2222-3333-4444-555555555555"
  lambda_zip_path = "../../tests/fixtures/lambda.zip"
}

run "memory_function_only" {
  command = apply

  assert {
    condition     = output.memory_function_name == "s3memory-memory" && output.mcp_url == null
    error_message = "The example deploys the memory function, and no MCP endpoint without jwt_issuer."
  }

  assert {
    condition     = output.store_id == "team-agent-memory"
    error_message = "The store id is the existing bucket's name."
  }

  assert {
    condition = alltrue([
      for statement in jsondecode(output.bucket_policy_statements) :
      statement.Effect == "Deny" && alltrue([for arn in flatten([statement.Resource]) : startswith(arn, "arn:aws:s3:::team-agent-memory")])
    ])
    error_message = "bucket_policy_statements are the Deny statements to add to the existing bucket's policy."
  }

  assert {
    condition = (
      strcontains(output.required_key_policy_statements, "arn:aws:iam::123456789012:role/s3memory-memory-lambda") &&
      !strcontains(output.required_key_policy_statements, "s3memory-agent")
    )
    error_message = "required_key_policy_statements name the memory role, and no agent role (the example has none)."
  }
}

run "behind_an_identity_provider_in_a_vpc" {
  command = plan

  variables {
    jwt_issuer             = "https://issuer.example.com/"
    jwt_audience           = ["my-client"]
    dead_letter_target_arn = "arn:aws:sqs:eu-west-1:123456789012:s3memory-dlq"
    vpc_subnet_ids         = ["subnet-0123456789abcdef0"]
    vpc_security_group_ids = ["sg-0123456789abcdef0"]
  }

  assert {
    condition     = output.store_id == "team-agent-memory"
    error_message = "The example plans with the HTTP API, the MCP endpoint, a VPC and a dead-letter queue."
  }
}
