variable "region" {
  description = "AWS region of the bucket and the key, where the functions are deployed (the module checks every name below)."
  type        = string
  default     = "eu-west-1"
}

variable "name_prefix" {
  description = "Prefix for the module's named resources."
  type        = string
  default     = "s3memory"
}

variable "bucket_name" {
  description = "Name of your existing, versioned bucket (the module does not manage it)."
  type        = string
}

variable "memory_prefix" {
  description = "Key prefix of the store in the bucket (the module's rules); nothing else may write below it."
  type        = string
  default     = "users/"
}

variable "kms_key_arn" {
  description = "ARN of your existing symmetric KMS key (not an alias), the bucket's default encryption key."
  type        = string
}

variable "lambda_zip_path" {
  description = "Path to the Lambda deployment zip (`make lambda-zip`)."
  type        = string
  default     = "../../../dist/lambda.zip"
}

variable "jwt_issuer" {
  description = "Your identity provider's issuer URL: set, the HTTP API (POST /memory) and the MCP endpoint (/mcp) are created behind it. null: the memory function only, invoked by your backend."
  type        = string
  default     = null
}

variable "jwt_audience" {
  description = "Accepted token audiences (with jwt_issuer)."
  type        = list(string)
  default     = []
}

variable "dead_letter_target_arn" {
  description = "An SQS queue or SNS topic for asynchronous invocations that failed Lambda's retries (null: none)."
  type        = string
  default     = null
}

variable "vpc_subnet_ids" {
  description = "Subnets to run the functions in (with vpc_security_group_ids); [] runs them outside a VPC."
  type        = list(string)
  default     = []
}

variable "vpc_security_group_ids" {
  description = "Security groups of the functions in the VPC (with vpc_subnet_ids)."
  type        = list(string)
  default     = []
}
