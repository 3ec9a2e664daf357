output "memory_function_name" {
  description = "The memory function, to invoke from your backend."
  value       = module.s3memory.memory_function_name
}

output "mcp_url" {
  description = "The MCP endpoint (null without jwt_issuer)."
  value       = module.s3memory.mcp_url
}

output "bucket_policy_statements" {
  description = "JSON: the statements to add to your bucket's policy (TLS only, SSE-KMS only)."
  value       = module.s3memory.bucket_policy_statements
}

output "required_key_policy_statements" {
  description = "JSON: the statements to add to your key's policy, unless it delegates to IAM."
  value       = module.s3memory.required_key_policy_statements
}

output "store_id" {
  description = "S3MEMORY_STORE_ID for clients outside Lambda."
  value       = module.s3memory.store_id
}
