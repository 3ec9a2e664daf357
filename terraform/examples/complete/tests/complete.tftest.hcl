# The example as written, against a mocked AWS provider (the module's mock data): it plans with its
# defaults (the memory function only), and with every option on (the agent, the HTTP API, the MCP
# endpoint, shared memory mounts, idle expiry, the operator role). The module's own tests check the
# resources; this checks that the example passes its variables through.

mock_provider "aws" {
  source = "../../tests/mocks"
}

variables {
  bucket_name     = "example-agent-memory"
  lambda_zip_path = "../../tests/fixtures/lambda.zip"
}

run "defaults" {
  command = plan

  assert {
    condition = (
      output.bucket_name == "example-agent-memory" &&
      output.storage_format == 2 &&
      output.store_id == "example-agent-memory"
    )
    error_message = "The example's defaults: the module's bucket, storage format 2, the store id the bucket's name."
  }
}

run "every_option" {
  command = plan

  variables {
    anthropic_api_key_secret_arn    = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:anthropic-api-key-AbCdEf"
    create_http_api                 = true
    jwt_issuer                      = "https://issuer.example.com/"
    jwt_audience                    = ["example-client"]
    create_mcp_endpoint             = true
    mcp_url                         = "https://memory.example.com/mcp"
    expiry_idle_days                = 90
    store_id                        = "example-store"
    create_operator_role            = true
    operator_trusted_principal_arns = ["arn:aws:iam::123456789012:role/memory-admin"]
    shared_memory_mounts = [
      { claim = "groups", value = "acme", point = "/memories/team", memory = "team-acme" },
    ]
  }

  assert {
    condition     = output.store_id == "example-store" && output.mcp_url == "https://memory.example.com/mcp"
    error_message = "The example passes store_id and mcp_url through."
  }
}
