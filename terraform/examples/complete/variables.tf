variable "region" {
  description = "AWS region to deploy into."
  type        = string
  default     = "eu-west-1"

  validation {
    condition     = can(regex("^[a-z]{2}(-[a-z]+)+-[0-9]$", var.region))
    error_message = "region must be an AWS region name such as eu-west-1."
  }
}

variable "default_tags" {
  description = "Tags the provider adds to every resource."
  type        = map(string)
  default     = { Project = "s3memory" }

  validation {
    condition     = alltrue([for key, value in var.default_tags : length(key) <= 128 && length(value) <= 256])
    error_message = "Tag keys must be at most 128 characters and values at most 256."
  }
}

variable "name_prefix" {
  description = "Prefix for the module's named resources."
  type        = string
  default     = "s3memory"

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{0,30}[a-z0-9]$", var.name_prefix))
    error_message = "name_prefix must be 2-32 lowercase letters, digits and hyphens, starting with a letter."
  }
}

variable "bucket_name" {
  description = "Globally unique name of the memory bucket."
  type        = string

  validation {
    condition     = can(regex("^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$", var.bucket_name))
    error_message = "bucket_name must be 3-63 lowercase letters, digits and hyphens."
  }
}

variable "force_destroy" {
  description = "Let `terraform destroy` delete a non-empty bucket (throwaway environments only)."
  type        = bool
  default     = false
}

variable "lambda_zip_path" {
  description = "Path of the zip built by `make lambda-zip`, relative to this directory."
  type        = string
  default     = "../../../dist/lambda.zip"

  validation {
    condition     = endswith(var.lambda_zip_path, ".zip")
    error_message = "lambda_zip_path must point to a .zip file."
  }
}

variable "storage_format" {
  description = "Storage format of the store: 2 (the default: private names, docs/format-v2.md) or 1 (plain names). Chosen when the store is created; a deployment made in format 1 keeps storage_format = 1 until it migrates. See docs/deploy.md, \"Storage format\"."
  type        = number
  default     = 2

  validation {
    condition     = contains([1, 2], var.storage_format)
    error_message = "storage_format must be 1 or 2."
  }
}

variable "store_id" {
  description = "Format 2: the store's id, for the life of the store (\"\": the bucket's name; a replica's readers set the source's id)."
  type        = string
  default     = ""
}

variable "expiry_idle_days" {
  description = "Delete the memory of users idle this many days, by the scheduled expiry function (it never removes wrapped data keys); null keeps memory forever. See docs/deploy.md, \"Idle expiry\"."
  type        = number
  default     = null

  validation {
    condition     = var.expiry_idle_days == null ? true : var.expiry_idle_days >= 1
    error_message = "expiry_idle_days must be null or at least 1."
  }
}

variable "expiry_schedule_expression" {
  description = "When the expiry function runs: an EventBridge Scheduler rate or cron expression (UTC)."
  type        = string
  default     = "rate(1 day)"

  validation {
    condition     = startswith(var.expiry_schedule_expression, "rate(") || startswith(var.expiry_schedule_expression, "cron(")
    error_message = "expiry_schedule_expression must be a rate(...) or cron(...) expression."
  }
}

variable "anthropic_api_key_secret_arn" {
  description = "Secrets Manager ARN of the Anthropic API key for the agent function (null: none)."
  type        = string
  default     = null

  validation {
    condition     = var.anthropic_api_key_secret_arn == null ? true : startswith(var.anthropic_api_key_secret_arn, "arn:")
    error_message = "anthropic_api_key_secret_arn must be null or an ARN."
  }
}

variable "create_agent_function" {
  description = "Create the agent function: null (default) exactly when anthropic_api_key_secret_arn is set; true or false decide."
  type        = bool
  default     = null
}

variable "agent_model" {
  description = "Claude model of the agent function."
  type        = string
  default     = "claude-sonnet-4-5"

  validation {
    condition     = length(var.agent_model) > 0
    error_message = "agent_model must not be empty."
  }
}

variable "create_http_api" {
  description = "Create the JWT-protected HTTP API (POST /memory)."
  type        = bool
  default     = false
}

variable "jwt_issuer" {
  description = "JWT issuer URL (required with create_http_api)."
  type        = string
  default     = null

  validation {
    condition     = var.jwt_issuer == null ? true : startswith(var.jwt_issuer, "https://")
    error_message = "jwt_issuer must be null or an https:// URL."
  }
}

variable "jwt_audience" {
  description = "Accepted JWT audiences (required with create_http_api)."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for audience in var.jwt_audience : length(audience) > 0])
    error_message = "jwt_audience entries must not be empty."
  }
}

variable "jwt_authorization_scopes" {
  description = "Scopes of which a token must carry one (with create_http_api); [] requires none."
  type        = list(string)
  default     = []
}

variable "create_mcp_endpoint" {
  description = "Serve the memory tool to MCP clients on the HTTP API (ANY /mcp and the protected-resource metadata); needs create_http_api."
  type        = bool
  default     = false
}

variable "mcp_url" {
  description = "Public https:// URL of the MCP route behind a custom domain; null means <api_endpoint>/mcp."
  type        = string
  default     = null
}

variable "kms_key_administrator_arns" {
  description = "IAM roles/users that administer the KMS key; [] means the identity running Terraform (an explicit list must include it)."
  type        = list(string)
  default     = []
}

variable "memory_quota_bytes" {
  description = "Per-user limit on the memory's plaintext bytes (null: none)."
  type        = number
  default     = null
}

variable "memory_quota_files" {
  description = "Per-user limit on the number of memory files (null: none)."
  type        = number
  default     = null
}

variable "shared_memory_mounts" {
  description = "Shared memories mounted by the claims of a verified token: grants { claim, value, point, memory, mode }; needs create_http_api and storage_format = 2 (see the module's README, \"Shared memory mounts\")."
  type = list(object({
    claim  = string
    value  = string
    point  = string
    memory = string
    mode   = optional(string, "read_only")
  }))
  default  = []
  nullable = false
}

variable "create_operator_role" {
  description = "Create the operator role for the s3memory operator commands (requires operator_trusted_principal_arns)."
  type        = bool
  default     = false
}

variable "operator_trusted_principal_arns" {
  description = "IAM roles/users that may assume the operator role."
  type        = list(string)
  default     = []
}

variable "operator_require_mfa" {
  description = "Let them assume it only with MFA (false for federated or role-chained principals)."
  type        = bool
  default     = true
}
