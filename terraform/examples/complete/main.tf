# A complete deployment of the s3memory module: bucket, KMS key, the memory function, the agent
# function (with an Anthropic API key secret) and, optionally,
# the JWT-protected HTTP API (and the MCP endpoint on it), the operator role and idle expiry. Build the Lambda zip first (`make lambda-zip` at the repo root).

provider "aws" {
  region = var.region

  default_tags {
    tags = var.default_tags
  }
}

module "s3memory" {
  source = "../.."

  name_prefix     = var.name_prefix
  bucket_name     = var.bucket_name
  force_destroy   = var.force_destroy
  lambda_zip_path = var.lambda_zip_path

  memory_prefix                      = "users/"
  storage_format                     = var.storage_format
  store_id                           = var.store_id
  noncurrent_version_expiration_days = 30
  log_retention_in_days              = 30

  expiry_idle_days           = var.expiry_idle_days
  expiry_schedule_expression = var.expiry_schedule_expression

  anthropic_api_key_secret_arn = var.anthropic_api_key_secret_arn
  create_agent_function        = var.create_agent_function
  agent_model                  = var.agent_model

  kms_key_administrator_arns = var.kms_key_administrator_arns
  memory_quota_bytes         = var.memory_quota_bytes
  memory_quota_files         = var.memory_quota_files

  create_http_api          = var.create_http_api
  jwt_issuer               = var.jwt_issuer
  jwt_audience             = var.jwt_audience
  jwt_authorization_scopes = var.jwt_authorization_scopes
  create_mcp_endpoint      = var.create_mcp_endpoint
  mcp_url                  = var.mcp_url
  shared_memory_mounts     = var.shared_memory_mounts

  create_operator_role            = var.create_operator_role
  operator_trusted_principal_arns = var.operator_trusted_principal_arns
  operator_require_mfa            = var.operator_require_mfa

  tags = {
    Component = "agent-memory"
  }
}
