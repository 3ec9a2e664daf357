output "bucket_name" {
  description = "Name of the memory bucket (S3MEMORY_BUCKET): the created one, or the existing one (create_bucket = false)."
  value       = local.memory_bucket_name
}

output "bucket_arn" {
  description = "ARN of the memory bucket."
  value       = var.create_bucket ? aws_s3_bucket.memory[0].arn : local.bucket_arn
}

output "bucket_policy_statements" {
  description = "JSON list of the bucket-policy statements the module sets on a bucket it creates (deny requests without TLS or below TLS 1.2, uploads asking for another encryption than SSE-KMS, and SSE-C). With create_bucket = false the module sets no bucket policy: add these to the bucket's own."
  value       = jsonencode(local.bucket_policy.Statement)
}

output "memory_prefix" {
  description = "Key prefix of the users' namespaces (S3MEMORY_PREFIX)."
  value       = var.memory_prefix
}

output "storage_format" {
  description = "Storage format of the store (1 or 2; S3MEMORY_STORAGE_FORMAT, set in the functions' environment only for 2)."
  value       = var.storage_format
}

output "store_id" {
  description = "The store's id (S3MEMORY_STORE_ID): store_id, or the bucket's name when it is empty. Format 2 binds every object to it; set it to the same value wherever the store is read (operator commands, a replica's readers)."
  value       = local.store_id
}

output "store_identity" {
  description = "Format 2: the store identity (32 hex digits, s3memory/formats/store_keys.py) that the KMS policies require as kms:EncryptionContext:s3memory:store. null on format 1, and when Terraform cannot compute it (the policies then require the context key only; see store.tf)."
  value       = var.storage_format == 2 ? local.store_identity : null
}

output "kms_key_arn" {
  description = "ARN of the customer-managed KMS key (S3MEMORY_KMS_KEY_ID): the created one, or kms_key_arn (create_kms_key = false)."
  value       = local.kms_key_arn
}

output "kms_key_id" {
  description = "Id of the customer-managed KMS key."
  value       = var.create_kms_key ? aws_kms_key.memory[0].key_id : element(split("/", local.kms_key_arn), 1)
}

output "kms_key_alias" {
  description = "Alias of the customer-managed KMS key; null with create_kms_key = false (the module creates no alias)."
  value       = one(aws_kms_alias.memory[*].name)
}

output "required_key_policy_statements" {
  description = "JSON list of the key-policy statements that let the module's roles (and additional_key_user_arns, and CloudWatch Logs for the module's log groups with encrypt_log_groups) use the key, under the same conditions as their IAM policies. With create_kms_key = false: add them to that key's policy (they name the roles, so after the apply that creates them; CloudWatchLogsForModuleLogGroups before it, or log group creation fails). With the module's own key: already in its policy."
  value       = jsonencode(local.kms_key_user_statements)
}

output "memory_function_name" {
  description = "Name of the memory Lambda function."
  value       = aws_lambda_function.this["memory"].function_name
}

output "memory_function_arn" {
  description = "ARN of the memory Lambda function."
  value       = aws_lambda_function.this["memory"].arn
}

output "agent_function_name" {
  description = "Name of the agent Lambda function; null without it (create_agent_function)."
  value       = try(aws_lambda_function.this["agent"].function_name, null)
}

output "agent_function_arn" {
  description = "ARN of the agent Lambda function; null without it (create_agent_function)."
  value       = try(aws_lambda_function.this["agent"].arn, null)
}

output "memory_role_arn" {
  description = "ARN of the memory function's execution role."
  value       = aws_iam_role.this["memory"].arn
}

output "agent_role_arn" {
  description = "ARN of the agent function's execution role; null without the agent function."
  value       = try(aws_iam_role.this["agent"].arn, null)
}

output "operator_role_arn" {
  description = "ARN of the operator role (assume it to run the s3memory operator commands); null when create_operator_role is false."
  value       = one(aws_iam_role.operator[*].arn)
}

output "expiry_function_name" {
  description = "Name of the expiry Lambda function that the schedule invokes; null when expiry_idle_days is null (expiry off)."
  value       = try(aws_lambda_function.this["expiry"].function_name, null)
}

output "log_group_names" {
  description = "CloudWatch log groups created by the module (the agent function's only with it, the expiry function's only with expiry_idle_days, the MCP function's only with create_mcp_endpoint, the API's only when create_http_api is true)."
  value = {
    memory = aws_cloudwatch_log_group.this["memory"].name
    agent  = try(aws_cloudwatch_log_group.this["agent"].name, null)
    expiry = try(aws_cloudwatch_log_group.this["expiry"].name, null)
    mcp    = try(aws_cloudwatch_log_group.this["mcp"].name, null)
    api    = try(aws_cloudwatch_log_group.this["api"].name, null)
  }
}

output "api_endpoint" {
  description = "Base URL of the HTTP API (POST <api_endpoint>/memory); null when create_http_api is false."
  value       = one(aws_apigatewayv2_api.this[*].api_endpoint)
}

output "api_id" {
  description = "Id of the HTTP API; null when create_http_api is false."
  value       = one(aws_apigatewayv2_api.this[*].id)
}

output "mcp_url" {
  description = "The URL MCP clients connect to (S3MEMORY_MCP_URL: mcp_url, or <api_endpoint>/mcp), e.g. `claude mcp add --transport http s3memory <mcp_url>`; null when create_mcp_endpoint is false."
  value       = local.mcp_enabled ? local.mcp_url : null
}

output "mcp_function_name" {
  description = "Name of the MCP Lambda function; null when create_mcp_endpoint is false."
  value       = try(aws_lambda_function.this["mcp"].function_name, null)
}

output "mcp_function_arn" {
  description = "ARN of the MCP Lambda function; null when create_mcp_endpoint is false."
  value       = try(aws_lambda_function.this["mcp"].arn, null)
}
