output "bucket_name" {
  description = "S3MEMORY_BUCKET for clients outside Lambda."
  value       = module.s3memory.bucket_name
}

output "memory_prefix" {
  description = "S3MEMORY_PREFIX for clients outside Lambda."
  value       = module.s3memory.memory_prefix
}

output "kms_key_arn" {
  description = "S3MEMORY_KMS_KEY_ID for clients outside Lambda."
  value       = module.s3memory.kms_key_arn
}

output "storage_format" {
  description = "S3MEMORY_STORAGE_FORMAT for clients outside Lambda."
  value       = module.s3memory.storage_format
}

output "store_id" {
  description = "S3MEMORY_STORE_ID for clients outside Lambda (format 2)."
  value       = module.s3memory.store_id
}

output "store_identity" {
  description = "Format 2: the store identity the KMS policies require (null on format 1)."
  value       = module.s3memory.store_identity
}

output "kms_key_alias" {
  description = "Alias of the KMS key."
  value       = module.s3memory.kms_key_alias
}

output "memory_function_name" {
  description = "Name of the memory function."
  value       = module.s3memory.memory_function_name
}

output "agent_function_name" {
  description = "Name of the agent function."
  value       = module.s3memory.agent_function_name
}

output "api_endpoint" {
  description = "HTTP API base URL (null unless create_http_api)."
  value       = module.s3memory.api_endpoint
}

output "mcp_url" {
  description = "The URL MCP clients connect to (null unless create_mcp_endpoint)."
  value       = module.s3memory.mcp_url
}

output "operator_role_arn" {
  description = "The role to assume for the s3memory operator commands (null unless create_operator_role)."
  value       = module.s3memory.operator_role_arn
}

output "expiry_function_name" {
  description = "Name of the scheduled expiry function (null unless expiry_idle_days)."
  value       = module.s3memory.expiry_function_name
}
