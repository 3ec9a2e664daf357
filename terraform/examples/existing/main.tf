# s3memory on a bucket and a KMS key a platform team already runs: the module creates neither and
# manages none of their settings or policies, and there is no agent function (the team's own agent
# calls the memory function or the MCP endpoint). The module's outputs bucket_policy_statements and
# required_key_policy_statements say what to add to the bucket's and the key's policies
# (terraform/README.md, "Bring your own bucket and key"). Build the Lambda zip first (`make
# lambda-zip` at the repo root).

provider "aws" {
  region = var.region
}

module "s3memory" {
  source = "../.."

  name_prefix     = var.name_prefix
  lambda_zip_path = var.lambda_zip_path

  create_bucket  = false
  bucket_name    = var.bucket_name
  memory_prefix  = var.memory_prefix
  create_kms_key = false
  kms_key_arn    = var.kms_key_arn

  create_agent_function = false

  create_http_api     = var.jwt_issuer != null
  jwt_issuer          = var.jwt_issuer
  jwt_audience        = var.jwt_audience
  create_mcp_endpoint = var.jwt_issuer != null

  dead_letter_target_arn = var.dead_letter_target_arn
  vpc_subnet_ids         = var.vpc_subnet_ids
  vpc_security_group_ids = var.vpc_security_group_ids
}
