# ---------------------------------------------------------------------------------------------------
# Naming and tagging
# ---------------------------------------------------------------------------------------------------

variable "name_prefix" {
  description = "Prefix for every named resource (Lambda functions, IAM roles, log groups, API). Lowercase letters, digits and hyphens; starts with a letter; at most 32 characters."
  type        = string
  default     = "s3memory"
  nullable    = false

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{0,30}[a-z0-9]$", var.name_prefix))
    error_message = "name_prefix must be 2-32 characters of lowercase letters, digits and hyphens, start with a letter and not end with a hyphen."
  }
}

variable "tags" {
  description = "Tags added to every taggable resource (merged over the module's own `s3memory:module` tag)."
  type        = map(string)
  default     = {}
  nullable    = false

  validation {
    condition = alltrue([
      for key, value in var.tags :
      length(key) >= 1 && length(key) <= 128 && length(value) <= 256 && !startswith(lower(key), "aws:")
    ])
    error_message = "Tag keys must be 1-128 characters and must not start with \"aws:\"; tag values at most 256 characters."
  }
}

# ---------------------------------------------------------------------------------------------------
# Bucket
# ---------------------------------------------------------------------------------------------------

variable "bucket_name" {
  description = "Name of the S3 bucket that holds the encrypted memory files: the bucket the module creates, or with create_bucket = false an existing one of yours. Globally unique; 3-63 lowercase letters, digits and hyphens (dots are refused: they break virtual-hosted TLS)."
  type        = string
  nullable    = false

  validation {
    condition = (
      can(regex("^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$", var.bucket_name)) &&
      !startswith(var.bucket_name, "xn--") &&
      !startswith(var.bucket_name, "sthree-") &&
      !endswith(var.bucket_name, "-s3alias") &&
      !endswith(var.bucket_name, "--ol-s3") &&
      !endswith(var.bucket_name, "--x-s3")
    )
    error_message = "bucket_name must be a valid S3 bucket name of 3-63 lowercase letters, digits and hyphens, without dots and without a reserved prefix (xn--, sthree-) or suffix (-s3alias, --ol-s3, --x-s3)."
  }
}

variable "create_bucket" {
  description = "Create the bucket bucket_name (default). false: bucket_name is an existing bucket of yours, and the module creates no bucket resource and manages none of its settings or its policy; you keep versioning on, default encryption SSE-KMS with the key (output kms_key_arn) and S3 Bucket Keys, all four public access block settings, BucketOwnerEnforced and a TLS-only policy (output bucket_policy_statements; README.md, \"Bring your own bucket and key\"). The roles get exactly the same IAM grants on it. The variables of a created bucket (force_destroy, the lifecycle days, access logging) are then ignored."
  type        = bool
  default     = true
  nullable    = false
}

variable "force_destroy" {
  description = "Allow `terraform destroy` to delete the bucket even when it still holds objects (all users' memories). Keep false outside of throwaway environments."
  type        = bool
  default     = false
  nullable    = false
}

variable "memory_prefix" {
  description = "Key prefix under which s3memory stores each user's namespace (`<prefix><user id>/`). Passed to the functions as S3MEMORY_PREFIX and used to scope IAM. Must be non-empty plain segments each ending in '/', e.g. \"users/\" or \"tenants/prod/\"."
  type        = string
  default     = "users/"
  nullable    = false

  validation {
    # Non-empty on purpose: an empty prefix would widen the IAM grants to the whole bucket. A
    # segment may not start with '.', which also rules out '.' and '..'.
    condition     = can(regex("^([A-Za-z0-9_-][A-Za-z0-9_.-]*/)+$", var.memory_prefix)) && length(var.memory_prefix) <= 256
    error_message = "memory_prefix must be one or more segments of letters, digits, '_', '-' and '.' (not starting with '.'), each ending in '/', such as \"users/\"; at most 256 characters."
  }
}

variable "storage_format" {
  description = "Storage format of the store, passed to every function as S3MEMORY_STORAGE_FORMAT: 2 (default: private names, every object and data key bound to the store identity, docs/format-v2.md) or 1 (user ids and paths in plain object keys, docs/format.md). Always explicit (no \"auto\"): the key policy and the roles' policies are written for this format, and with 2 they also require the store's identity in the KMS encryption context (see store_id). An existing format-1 deployment must set storage_format = 1 before upgrading to a module version whose default is 2, or move to 2: storage_format = 2 with migrating_from_format_1 = true, then `s3memory migrate` (docs/format-v2.md, \"Migration from format 1\")."
  type        = number
  default     = 2
  nullable    = false

  validation {
    condition     = contains([1, 2], var.storage_format)
    error_message = "storage_format must be 2 (private names, docs/format-v2.md, the default) or 1 (plain names)."
  }
}

variable "store_id" {
  description = "Format 2: the store's id (S3MEMORY_STORE_ID), hashed with memory_prefix into the store identity that every object and data key is bound to. \"\" (default) means the bucket's name. It must stay the same for the life of the store; a replica's readers set the source store's id (by default the source bucket's name). At most 255 characters, no control, format or separator characters but the space, no leading or trailing space. Passed to the functions whenever storage_format is 2 (as the bucket's name when empty) or it is set."
  type        = string
  default     = ""
  nullable    = false

  validation {
    # The functions refuse more than 255 characters (code points, which regexall counts; length()
    # would count grapheme clusters) or a character Python's str.isprintable refuses: categories C
    # (control, format, private use) and Z (separators) but the ASCII space.
    condition = var.store_id == "" || (
      length(regexall("(?s).", var.store_id)) <= 255 &&
      trimspace(var.store_id) == var.store_id &&
      !can(regex("[\\p{C}\\p{Z}]", replace(var.store_id, " ", "")))
    )
    error_message = "store_id must be \"\" (the bucket's name) or at most 255 printable characters: no control, format or separator characters but the space, and no leading or trailing space."
  }
}

variable "migrating_from_format_1" {
  description = "storage_format = 2 only: the store still holds format-1 users, being moved to format 2 (docs/format-v2.md, \"Migration from format 1\": each user is moved before their first command, and `s3memory migrate` moves the rest). The key users and the expiry role may then also kms:Decrypt, never GenerateDataKey, with the format-1 encryption context (s3memory:user present, s3memory:store absent), which reading a format-1 user's files needs. Set it back to false once `s3memory migrate` has marked the store migrated. No effect on format 1, whose grants already take that context."
  type        = bool
  default     = false
  nullable    = false
}

variable "noncurrent_version_expiration_days" {
  description = "Days after which noncurrent object versions (overwritten or deleted memory files) are permanently removed."
  type        = number
  default     = 30
  nullable    = false

  validation {
    condition     = var.noncurrent_version_expiration_days >= 1 && var.noncurrent_version_expiration_days <= 3650 && floor(var.noncurrent_version_expiration_days) == var.noncurrent_version_expiration_days
    error_message = "noncurrent_version_expiration_days must be a whole number between 1 and 3650."
  }
}

variable "abort_incomplete_multipart_upload_days" {
  description = "Days after which incomplete multipart uploads are aborted and their parts deleted."
  type        = number
  default     = 7
  nullable    = false

  validation {
    condition     = var.abort_incomplete_multipart_upload_days >= 1 && var.abort_incomplete_multipart_upload_days <= 365 && floor(var.abort_incomplete_multipart_upload_days) == var.abort_incomplete_multipart_upload_days
    error_message = "abort_incomplete_multipart_upload_days must be a whole number between 1 and 365."
  }
}

variable "object_expiration_days" {
  description = "Removed: must stay null. Its S3 lifecycle rule expired every object under memory_prefix, each user's wrapped data key (<prefix><user>/internal/keys/v<n>, written once) included, which made all of that user's memory unreadable. Use expiry_idle_days instead (idle expiry by the s3memory expiry function, which never removes keys). Kept only so that a configuration that still sets it fails at plan with this explanation."
  type        = number
  default     = null

  validation {
    condition     = var.object_expiration_days == null
    error_message = "object_expiration_days was removed: its lifecycle rule also expired each user's wrapped data key, making their memory unreadable. Use expiry_idle_days (idle expiry by the s3memory expiry function, which never removes keys)."
  }
}

variable "access_log_bucket" {
  description = "Name of an existing bucket that receives S3 server access logs for the memory bucket (it must allow the logging.s3.amazonaws.com service to write). null (default) disables access logging."
  type        = string
  default     = null

  validation {
    condition     = var.access_log_bucket == null ? true : can(regex("^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$", var.access_log_bucket))
    error_message = "access_log_bucket must be null or a valid S3 bucket name."
  }
}

variable "access_log_prefix" {
  description = "Key prefix for S3 server access logs in access_log_bucket."
  type        = string
  default     = "s3memory/"
  nullable    = false

  validation {
    condition     = length(var.access_log_prefix) <= 512 && !startswith(var.access_log_prefix, "/")
    error_message = "access_log_prefix must be at most 512 characters and must not start with '/'."
  }
}

# ---------------------------------------------------------------------------------------------------
# KMS
# ---------------------------------------------------------------------------------------------------

variable "create_kms_key" {
  description = "Create the customer-managed KMS key (default). false: use the existing key kms_key_arn instead; the module then creates no key or alias and manages no key policy: the roles get the same grants through their IAM policies (with the s3memory encryption context and the store identity, or via S3 for this bucket), and the key policy must let them (and CloudWatch Logs, with encrypt_log_groups) use the key: output required_key_policy_statements holds the statements to add, or a key policy that delegates to IAM (the account root with kms:*) suffices for the roles. kms_key_alias, kms_key_deletion_window_in_days and kms_key_administrator_arns are then ignored."
  type        = bool
  default     = true
  nullable    = false
}

variable "kms_key_arn" {
  description = "With create_kms_key = false (and only then): the ARN of your existing symmetric customer-managed KMS key, in the provider's region. A key ARN, not an alias."
  type        = string
  default     = null

  validation {
    condition     = var.kms_key_arn == null ? true : can(regex("^arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:key/[a-zA-Z0-9-]+$", var.kms_key_arn))
    error_message = "kms_key_arn must be null or a KMS key ARN (arn:<partition>:kms:<region>:<account>:key/<key id>); aliases are not accepted (IAM policies name keys by key ARN)."
  }
}

variable "kms_key_alias" {
  description = "Alias of the customer-managed KMS key (must start with \"alias/\"; the reserved \"alias/aws/\" namespace is refused)."
  type        = string
  default     = "alias/agent-memory"
  nullable    = false

  validation {
    condition     = can(regex("^alias/[A-Za-z0-9/_-]{1,250}$", var.kms_key_alias)) && !startswith(var.kms_key_alias, "alias/aws/")
    error_message = "kms_key_alias must look like \"alias/<name>\" (letters, digits, '/', '_', '-') and must not be in the reserved alias/aws/ namespace."
  }
}

variable "kms_key_deletion_window_in_days" {
  description = "Waiting period, in days, before KMS deletes the key after it is scheduled for deletion (`terraform destroy`). Every memory file becomes unreadable once the key is gone."
  type        = number
  default     = 30
  nullable    = false

  validation {
    condition     = var.kms_key_deletion_window_in_days >= 7 && var.kms_key_deletion_window_in_days <= 30 && floor(var.kms_key_deletion_window_in_days) == var.kms_key_deletion_window_in_days
    error_message = "kms_key_deletion_window_in_days must be a whole number between 7 and 30."
  }
}

variable "additional_key_user_arns" {
  description = "IAM role or user ARNs in this account, besides the module's own roles, that may use the key for s3memory data keys (same encryption-context condition) and through S3 on this bucket, e.g. a principal of your own running the s3memory CLI (create_operator_role creates such a role, with its S3 permissions, and makes it a key user itself). They still need an IAM policy of their own for S3."
  type        = list(string)
  default     = []
  nullable    = false

  validation {
    condition     = alltrue([for arn in var.additional_key_user_arns : can(regex("^arn:aws[a-z-]*:iam::[0-9]{12}:(role|user)/.+$", arn))])
    error_message = "additional_key_user_arns must contain only IAM role or user ARNs (arn:<partition>:iam::<account>:role/... or :user/...)."
  }
}

variable "kms_key_administrator_arns" {
  description = "IAM role or user ARNs that administer the KMS key: describe, enable/disable, rotation settings, description, tags, aliases, grants (list/revoke), deletion (schedule/cancel) and kms:PutKeyPolicy, the documented break-glass path (whoever can change the key policy can grant themselves Decrypt; CloudTrail logs it). No cryptographic operation. [] (default) means the identity that runs Terraform (for an assumed-role session, its role). An explicit list replaces it and must include that identity: AWS refuses a key policy that locks out its caller, and later applies change the policy with PutKeyPolicy."
  type        = list(string)
  default     = []
  nullable    = false

  validation {
    condition     = length(var.kms_key_administrator_arns) <= 20 && alltrue([for arn in var.kms_key_administrator_arns : can(regex("^arn:aws[a-z-]*:iam::[0-9]{12}:(role|user)/[A-Za-z0-9+=,.@_/-]+$", arn))])
    error_message = "kms_key_administrator_arns must be a list of at most 20 IAM role or user ARNs (arn:<partition>:iam::<account>:role/... or :user/...); the account root and wildcards are refused."
  }
}

# ---------------------------------------------------------------------------------------------------
# IAM
# ---------------------------------------------------------------------------------------------------

variable "iam_role_path" {
  description = "Path of the module's IAM roles (the Lambda execution roles and the optional operator role)."
  type        = string
  default     = "/"
  nullable    = false

  validation {
    condition     = can(regex("^/([A-Za-z0-9+=,.@_-]+/)*$", var.iam_role_path)) && length(var.iam_role_path) <= 512
    error_message = "iam_role_path must start and end with '/' (e.g. \"/\" or \"/service/s3memory/\") and be at most 512 characters."
  }
}

variable "iam_permissions_boundary_arn" {
  description = "ARN of a managed policy to set as the permissions boundary of the module's IAM roles (the Lambda execution roles and the optional operator role), if your organisation requires one. null (default) sets none."
  type        = string
  default     = null

  validation {
    condition     = var.iam_permissions_boundary_arn == null ? true : can(regex("^arn:aws[a-z-]*:iam::([0-9]{12}|aws):policy/.+$", var.iam_permissions_boundary_arn))
    error_message = "iam_permissions_boundary_arn must be null or an IAM managed policy ARN."
  }
}

# ---------------------------------------------------------------------------------------------------
# Operator role (optional)
# ---------------------------------------------------------------------------------------------------

variable "create_operator_role" {
  description = "Create the IAM role `<name_prefix>-operator` for the operator commands of the s3memory CLI (users, ls, cat, export, import, verify, erase, history, restore, redact): it reads, writes and erases every user's memory (object versions included) under memory_prefix, and uses the key like the Lambda roles (it is added to the key policy's key users). Requires operator_trusted_principal_arns. The Lambda roles' permissions do not change."
  type        = bool
  default     = false
  nullable    = false
}

variable "operator_trusted_principal_arns" {
  description = "IAM role or user ARNs allowed to assume the operator role (sts:AssumeRole; with MFA unless operator_require_mfa is false). Required (non-empty) when create_operator_role is true; ignored otherwise."
  type        = list(string)
  default     = []
  nullable    = false

  validation {
    condition     = length(var.operator_trusted_principal_arns) <= 20 && alltrue([for arn in var.operator_trusted_principal_arns : can(regex("^arn:aws[a-z-]*:iam::[0-9]{12}:(role|user)/[A-Za-z0-9+=,.@_/-]+$", arn))])
    error_message = "operator_trusted_principal_arns must be a list of at most 20 IAM role or user ARNs (arn:<partition>:iam::<account>:role/... or :user/...); an account root, an assumed-role session, a service and wildcards are refused."
  }
}

variable "operator_require_mfa" {
  description = "Trust the operator principals only when their request carries MFA (Condition Bool aws:MultiFactorAuthPresent = true): an IAM user calling AssumeRole with its MFA device's --serial-number and --token-code, or a session from GetSessionToken with MFA. Sessions federated through IAM Identity Center, SAML or OIDC, and role-chained sessions, usually carry no MFA context even when the sign-in used MFA: for such principals set false and enforce MFA at the identity provider."
  type        = bool
  default     = true
  nullable    = false
}

variable "operator_role_max_session_duration" {
  description = "Longest session of the operator role, in seconds (3600 to 43200). A role-chained session (assumed from another role's session) is limited to one hour by AWS whatever this says."
  type        = number
  default     = 3600
  nullable    = false

  validation {
    condition     = var.operator_role_max_session_duration >= 3600 && var.operator_role_max_session_duration <= 43200 && floor(var.operator_role_max_session_duration) == var.operator_role_max_session_duration
    error_message = "operator_role_max_session_duration must be a whole number of seconds between 3600 (1 hour) and 43200 (12 hours)."
  }
}

# ---------------------------------------------------------------------------------------------------
# Idle expiry (optional)
# ---------------------------------------------------------------------------------------------------

variable "expiry_idle_days" {
  description = "Turns idle expiry on: a scheduled function `<name_prefix>-expiry` (handler s3memory.aws_lambda.expiry.handler, S3MEMORY_EXPIRE_IDLE_DAYS) deletes the memory of users idle for this many days, and never removes a user's wrapped data keys. It deletes current versions only: on this versioned bucket that adds delete markers, and the data stays recoverable until noncurrent_version_expiration_days later. A whole number of days, 1 to 3650; null (default) leaves expiry off and creates nothing."
  type        = number
  default     = null

  validation {
    condition     = var.expiry_idle_days == null ? true : (var.expiry_idle_days >= 1 && var.expiry_idle_days <= 3650 && floor(var.expiry_idle_days) == var.expiry_idle_days)
    error_message = "expiry_idle_days must be null (expiry off) or a whole number of days between 1 and 3650."
  }
}

variable "expiry_schedule_expression" {
  description = "When the expiry function runs (with expiry_idle_days): an EventBridge Scheduler rate or cron expression, in UTC, such as \"rate(1 day)\" (default) or \"cron(0 3 * * ? *)\"."
  type        = string
  default     = "rate(1 day)"
  nullable    = false

  validation {
    condition     = can(regex("^(rate\\([1-9][0-9]{0,5} (minute|minutes|hour|hours|day|days)\\)|cron\\([^ ()]+( [^ ()]+){5}\\))$", var.expiry_schedule_expression))
    error_message = "expiry_schedule_expression must be an EventBridge Scheduler rate or cron expression, such as \"rate(1 day)\", \"rate(12 hours)\" or \"cron(0 3 * * ? *)\" (six fields); a one-time at(...) expression is refused."
  }
}

variable "expiry_function_timeout" {
  description = "Timeout of the expiry function, in seconds (default 900, Lambda's longest; with expiry_idle_days)."
  type        = number
  default     = 900
  nullable    = false

  validation {
    condition     = var.expiry_function_timeout >= 1 && var.expiry_function_timeout <= 900 && floor(var.expiry_function_timeout) == var.expiry_function_timeout
    error_message = "expiry_function_timeout must be a whole number of seconds between 1 and 900."
  }
}

# ---------------------------------------------------------------------------------------------------
# Lambda
# ---------------------------------------------------------------------------------------------------

variable "lambda_zip_path" {
  description = "Path to the deployment zip built by `make lambda-zip` (the s3memory package and its dependencies). Relative paths are resolved from the directory where terraform runs."
  type        = string
  default     = "../dist/lambda.zip"
  nullable    = false

  validation {
    condition     = endswith(lower(var.lambda_zip_path), ".zip") && fileexists(var.lambda_zip_path)
    error_message = "lambda_zip_path must name an existing .zip file; build it first with `make lambda-zip`."
  }
}

variable "lambda_runtime" {
  description = "Python runtime of every function. The zip must have been built for the same Python version."
  type        = string
  default     = "python3.11"
  nullable    = false

  validation {
    condition     = contains(["python3.11", "python3.12", "python3.13"], var.lambda_runtime)
    error_message = "lambda_runtime must be one of python3.11, python3.12 or python3.13."
  }
}

variable "lambda_architecture" {
  description = "Instruction set of every function. The zip contains compiled wheels (cryptography), so it must have been built for this architecture."
  type        = string
  default     = "x86_64"
  nullable    = false

  validation {
    condition     = contains(["x86_64", "arm64"], var.lambda_architecture)
    error_message = "lambda_architecture must be \"x86_64\" or \"arm64\"."
  }
}

variable "memory_function_timeout" {
  description = "Timeout of the memory function, in seconds."
  type        = number
  default     = 30
  nullable    = false

  validation {
    condition     = var.memory_function_timeout >= 1 && var.memory_function_timeout <= 900 && floor(var.memory_function_timeout) == var.memory_function_timeout
    error_message = "memory_function_timeout must be a whole number of seconds between 1 and 900."
  }
}

variable "memory_function_memory_size" {
  description = "Memory of the memory function, in MB (default 512: 0.29 of a vCPU, half the cold start of 256 MB; docs/deploy.md, \"Memory size\")."
  type        = number
  default     = 512
  nullable    = false

  validation {
    condition     = var.memory_function_memory_size >= 128 && var.memory_function_memory_size <= 10240 && floor(var.memory_function_memory_size) == var.memory_function_memory_size
    error_message = "memory_function_memory_size must be a whole number of MB between 128 and 10240."
  }
}

variable "memory_function_reserved_concurrency" {
  description = "Reserved concurrent executions of the memory function. null (default) leaves it unreserved: it runs in the account's unreserved pool, with no ceiling of its own. A whole number reserves that many, which is also its ceiling: a flood of slow requests can then not take the whole pool from the account's other functions, but Lambda keeps 100 of the account's concurrency unreserved, so a reservation fails on an account whose limit is low (new accounts may have 10). 0 disables the function (every invocation is throttled)."
  type        = number
  default     = null

  validation {
    condition     = var.memory_function_reserved_concurrency == null ? true : (var.memory_function_reserved_concurrency >= 0 && floor(var.memory_function_reserved_concurrency) == var.memory_function_reserved_concurrency)
    error_message = "memory_function_reserved_concurrency must be null (unreserved: the account's pool, no ceiling) or a whole number, 0 (disabled) or greater (reserved, and its ceiling)."
  }
}

variable "create_agent_function" {
  description = "Create the agent function `<name_prefix>-agent` (a Claude conversation with the memory tool, direct-invoked by a trusted backend), its role, its log group and its place among the key users. It needs an Anthropic API key, which it reads from anthropic_api_key_secret_arn. null (default): created exactly when anthropic_api_key_secret_arn is set, so that a deployment whose own agent calls the memory function (or the MCP endpoint) gets no function, and no role able to decrypt every user's memory, that it cannot use. true or false decides regardless (true without a secret plans with a warning: the function would have no API key)."
  type        = bool
  default     = null
}

variable "agent_function_timeout" {
  description = "Timeout of the agent function, in seconds. It waits on the Anthropic API, so it needs more than the memory function."
  type        = number
  default     = 120
  nullable    = false

  validation {
    condition     = var.agent_function_timeout >= 1 && var.agent_function_timeout <= 900 && floor(var.agent_function_timeout) == var.agent_function_timeout
    error_message = "agent_function_timeout must be a whole number of seconds between 1 and 900."
  }
}

variable "agent_function_memory_size" {
  description = "Memory of the agent function, in MB."
  type        = number
  default     = 512
  nullable    = false

  validation {
    condition     = var.agent_function_memory_size >= 128 && var.agent_function_memory_size <= 10240 && floor(var.agent_function_memory_size) == var.agent_function_memory_size
    error_message = "agent_function_memory_size must be a whole number of MB between 128 and 10240."
  }
}

variable "agent_function_reserved_concurrency" {
  description = "Reserved concurrent executions of the agent function: null (default) unreserved, 0 disabled, a whole number reserved and its ceiling (each invocation waits on the Anthropic API for up to its timeout). The trade-off is memory_function_reserved_concurrency's."
  type        = number
  default     = null

  validation {
    condition     = var.agent_function_reserved_concurrency == null ? true : (var.agent_function_reserved_concurrency >= 0 && floor(var.agent_function_reserved_concurrency) == var.agent_function_reserved_concurrency)
    error_message = "agent_function_reserved_concurrency must be null (unreserved: the account's pool, no ceiling) or a whole number, 0 (disabled) or greater (reserved, and its ceiling)."
  }
}

variable "agent_model" {
  description = "Claude model the agent function uses (S3MEMORY_MODEL)."
  type        = string
  default     = "claude-sonnet-4-5"
  nullable    = false

  validation {
    condition     = can(regex("^[a-z0-9][a-z0-9.@:_-]{0,127}$", var.agent_model))
    error_message = "agent_model must be a model id such as \"claude-sonnet-4-5\" (lowercase letters, digits, '.', '-', '_', ':', '@'; at most 128 characters)."
  }
}

variable "anthropic_api_key_secret_arn" {
  description = "ARN of the Secrets Manager secret that holds the Anthropic API key, passed to the agent function as ANTHROPIC_API_KEY_SECRET_ARN. When set, the agent role may call secretsmanager:GetSecretValue on exactly this ARN. null (default) grants nothing."
  type        = string
  default     = null

  validation {
    condition     = var.anthropic_api_key_secret_arn == null ? true : can(regex("^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:[0-9]{12}:secret:[A-Za-z0-9/_+=.@-]+$", var.anthropic_api_key_secret_arn))
    error_message = "anthropic_api_key_secret_arn must be null or a full Secrets Manager secret ARN (arn:<partition>:secretsmanager:<region>:<account>:secret:<name>-<suffix>), without wildcards."
  }
}

variable "anthropic_api_key_secret_kms_key_arn" {
  description = "ARN of the customer-managed KMS key that encrypts the Anthropic API key secret, if it is not the AWS-managed aws/secretsmanager key. When set, the agent role may kms:Decrypt with it only via Secrets Manager. null (default) grants nothing."
  type        = string
  default     = null

  validation {
    condition     = var.anthropic_api_key_secret_kms_key_arn == null ? true : can(regex("^arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:key/[a-zA-Z0-9-]+$", var.anthropic_api_key_secret_kms_key_arn))
    error_message = "anthropic_api_key_secret_kms_key_arn must be null or a KMS key ARN (arn:<partition>:kms:<region>:<account>:key/<key id>); aliases are not accepted."
  }
}

variable "tracing_mode" {
  description = "AWS X-Ray tracing mode of every function: \"PassThrough\" (default, no extra permissions) or \"Active\" (adds the X-Ray write permissions, which AWS only offers on resource \"*\")."
  type        = string
  default     = "PassThrough"
  nullable    = false

  validation {
    condition     = contains(["PassThrough", "Active"], var.tracing_mode)
    error_message = "tracing_mode must be \"PassThrough\" or \"Active\"."
  }
}

variable "log_level" {
  description = "Application log level of every function (Lambda's JSON log format: TRACE, DEBUG, INFO, WARN, ERROR or FATAL). The handlers log one record per invocation at INFO through Python logging, and the CloudWatch EMF metrics ride in that record: keep INFO or lower (TRACE, DEBUG), or the per-invocation log line and the metrics disappear."
  type        = string
  default     = "INFO"
  nullable    = false

  validation {
    condition     = contains(["TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL"], var.log_level)
    error_message = "log_level must be one of TRACE, DEBUG, INFO, WARN, ERROR or FATAL (INFO or lower keeps the per-invocation record and its metrics)."
  }
}

# ---------------------------------------------------------------------------------------------------
# Limits and content guard (the memory, agent and MCP functions)
# ---------------------------------------------------------------------------------------------------

variable "memory_quota_bytes" {
  description = "Per-user limit on the total plaintext bytes of the memory files (S3MEMORY_QUOTA_BYTES), for the memory, agent and MCP functions. A soft limit: usage is measured by listing and tracked per container, so concurrent writers may pass it by what they write meanwhile. null (default) sets no limit."
  type        = number
  default     = null

  validation {
    condition     = var.memory_quota_bytes == null ? true : (var.memory_quota_bytes >= 1 && var.memory_quota_bytes <= 1099511627776 && floor(var.memory_quota_bytes) == var.memory_quota_bytes)
    error_message = "memory_quota_bytes must be null (no limit) or a whole number of bytes between 1 and 1099511627776 (1 TiB)."
  }
}

variable "memory_quota_files" {
  description = "Per-user limit on the number of memory files (S3MEMORY_QUOTA_FILES), for the memory, agent and MCP functions; soft in the same way as memory_quota_bytes. null (default) sets no limit."
  type        = number
  default     = null

  validation {
    condition     = var.memory_quota_files == null ? true : (var.memory_quota_files >= 1 && var.memory_quota_files <= 1000000000 && floor(var.memory_quota_files) == var.memory_quota_files)
    error_message = "memory_quota_files must be null (no limit) or a whole number of files between 1 and 1000000000."
  }
}

variable "content_guard_mode" {
  description = "What the memory, agent and MCP functions do with text that looks like a secret (API keys, private keys, tokens) in a write (S3MEMORY_GUARD): \"refuse\" (default) refuses the write, \"redact\" stores it with each secret replaced by [REDACTED <kind>], \"off\" stores it as sent."
  type        = string
  default     = "refuse"
  nullable    = false

  validation {
    condition     = contains(["refuse", "redact", "off"], var.content_guard_mode)
    error_message = "content_guard_mode must be \"refuse\", \"redact\" or \"off\"."
  }
}

variable "max_file_bytes" {
  description = "Largest memory file, in plaintext bytes, that the memory, agent and MCP functions write (S3MEMORY_MAX_FILE_BYTES): 1 to 4194304 (4 MiB), default 1048576 (1 MiB)."
  type        = number
  default     = 1048576
  nullable    = false

  validation {
    condition     = var.max_file_bytes >= 1 && var.max_file_bytes <= 4194304 && floor(var.max_file_bytes) == var.max_file_bytes
    error_message = "max_file_bytes must be a whole number of bytes between 1 and 4194304 (4 MiB)."
  }
}

variable "memory_function_allow_direct_invocation" {
  description = "Whether the memory function serves events without API Gateway's requestContext, in which the caller names the user_id (S3MEMORY_DIRECT_INVOCATION = allow or refuse). null (default): allowed when create_http_api is false, refused when the HTTP API fronts the function, so that lambda:InvokeFunction alone does not reach every user's memory. HTTP API events are always served after the function verifies their JWT itself. The agent function is direct-invoked by design and is not affected."
  type        = bool
  default     = null
}

# ---------------------------------------------------------------------------------------------------
# Dead-letter target and VPC (optional; network.tf)
# ---------------------------------------------------------------------------------------------------

variable "dead_letter_target_arn" {
  description = "ARN of an SQS queue or SNS topic that receives the event of an asynchronous invocation that failed all of Lambda's retries (the function's dead-letter queue), for the functions that can be invoked asynchronously: the expiry function (its schedule invokes it so) and the memory and agent functions (when a direct invoker uses InvocationType Event). Their roles may then sqs:SendMessage or sns:Publish to exactly it. The MCP function, only ever invoked synchronously by API Gateway, gets none. Lambda sends the event whole: for the memory and agent functions that is the caller's command or prompt, the user id and any file text included, so the queue or topic must be encrypted (dead_letter_kms_key_arn) and as restricted as the bucket. A standard queue or topic (Lambda refuses FIFO ones). null (default): none."
  type        = string
  default     = null

  validation {
    condition     = var.dead_letter_target_arn == null ? true : can(regex("^arn:aws[a-z-]*:(sqs|sns):[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]{1,256}$", var.dead_letter_target_arn))
    error_message = "dead_letter_target_arn must be null or the ARN of a standard SQS queue or SNS topic (arn:<partition>:sqs:<region>:<account>:<name> or arn:<partition>:sns:...), not a FIFO one."
  }
}

variable "dead_letter_kms_key_arn" {
  description = "ARN of the customer-managed KMS key that encrypts the dead-letter queue or topic, if any: the roles that send to it may then kms:GenerateDataKey and kms:Decrypt with it, only through SQS or SNS. Its key policy must allow them too (or delegate to IAM). Used only with dead_letter_target_arn. null (default): none (an unencrypted target, or SSE with an AWS-managed key)."
  type        = string
  default     = null

  validation {
    condition     = var.dead_letter_kms_key_arn == null ? true : can(regex("^arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:key/[a-zA-Z0-9-]+$", var.dead_letter_kms_key_arn))
    error_message = "dead_letter_kms_key_arn must be null or a KMS key ARN (arn:<partition>:kms:<region>:<account>:key/<key id>); aliases are not accepted."
  }
}

variable "vpc_subnet_ids" {
  description = "Subnets to attach every function to (Lambda's vpc_config), with vpc_security_group_ids: both or neither. The roles then get the network-interface permissions of the AWS managed policy AWSLambdaVPCAccessExecutionRole (without its logs permissions, which they have for their own log groups). The subnets need a route to S3 (a gateway endpoint) and to KMS (an interface endpoint, or NAT), and, as each function requires, to Secrets Manager and the Anthropic API (the agent), and to the JWT issuer's keys (the memory and MCP functions behind the HTTP API): README.md, \"VPC\". [] (default): no VPC."
  type        = list(string)
  default     = []
  nullable    = false

  validation {
    condition     = length(var.vpc_subnet_ids) <= 16 && alltrue([for id in var.vpc_subnet_ids : can(regex("^subnet-([0-9a-f]{8}|[0-9a-f]{17})$", id))])
    error_message = "vpc_subnet_ids must be a list of at most 16 subnet ids (subnet-<8 or 17 hex digits>)."
  }
}

variable "vpc_security_group_ids" {
  description = "Security groups of every function's network interfaces, with vpc_subnet_ids: both or neither. They must allow the outbound HTTPS the functions need (see vpc_subnet_ids). [] (default): no VPC."
  type        = list(string)
  default     = []
  nullable    = false

  validation {
    condition     = length(var.vpc_security_group_ids) <= 5 && alltrue([for id in var.vpc_security_group_ids : can(regex("^sg-([0-9a-f]{8}|[0-9a-f]{17})$", id))])
    error_message = "vpc_security_group_ids must be a list of at most 5 security group ids (sg-<8 or 17 hex digits>)."
  }
}

# ---------------------------------------------------------------------------------------------------
# Logs
# ---------------------------------------------------------------------------------------------------

variable "log_retention_in_days" {
  description = "Retention of the module's CloudWatch log groups, in days (one of the values CloudWatch Logs accepts; 0 keeps logs forever)."
  type        = number
  default     = 30
  nullable    = false

  validation {
    condition     = contains([0, 1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653], var.log_retention_in_days)
    error_message = "log_retention_in_days must be one of 0, 1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653."
  }
}

variable "encrypt_log_groups" {
  description = "Encrypt the module's CloudWatch log groups with the module's KMS key (the key policy then lets CloudWatch Logs use it for exactly these log groups)."
  type        = bool
  default     = true
  nullable    = false
}

# ---------------------------------------------------------------------------------------------------
# HTTP API (optional)
# ---------------------------------------------------------------------------------------------------

variable "create_http_api" {
  description = "Create an API Gateway HTTP API with a JWT authorizer and the route `POST /memory` to the memory function (and, with create_mcp_endpoint, the MCP function's routes). Requires jwt_issuer and jwt_audience."
  type        = bool
  default     = false
  nullable    = false
}

variable "jwt_issuer" {
  description = "Issuer URL of the JWT authorizer, exactly the tokens' `iss` claim as the issuer's OIDC discovery document names it (e.g. https://cognito-idp.<region>.amazonaws.com/<pool id>, no trailing slash). Passed to the memory function (and the MCP function) as S3MEMORY_JWT_ISSUER: each verifies every HTTP API event's token itself. Required when create_http_api is true."
  type        = string
  default     = null

  validation {
    condition     = var.jwt_issuer == null ? true : can(regex("^https://[^\\s/?#]+(/[^\\s?#]*)?$", var.jwt_issuer))
    error_message = "jwt_issuer must be null or an https:// URL without query or fragment."
  }
}

variable "jwt_audience" {
  description = "Accepted audiences (`aud` claim, or `client_id` for Cognito access tokens) of the JWT authorizer and of the memory and MCP functions' own check (S3MEMORY_JWT_AUDIENCE, comma-separated). Required (non-empty) when create_http_api is true."
  type        = list(string)
  default     = []
  nullable    = false

  validation {
    condition     = length(var.jwt_audience) <= 50 && alltrue([for audience in var.jwt_audience : can(regex("^[^\\s,]{1,256}$", audience))])
    error_message = "jwt_audience must be a list of at most 50 non-empty strings of at most 256 characters without spaces or ',' (the function receives them comma-separated in S3MEMORY_JWT_AUDIENCE)."
  }
}

variable "jwt_authorization_scopes" {
  description = "OAuth scopes of the routes POST /memory and ANY /mcp: API Gateway's JWT authorizer and the functions themselves (S3MEMORY_JWT_SCOPES) require the token to carry at least one of them (`scope` or `scp` claim). [] (default) requires none. Used only with create_http_api."
  type        = list(string)
  default     = []
  nullable    = false

  validation {
    condition     = length(var.jwt_authorization_scopes) <= 50 && alltrue([for scope in var.jwt_authorization_scopes : can(regex("^[\\x21\\x23-\\x5B\\x5D-\\x7E]{1,256}$", scope))])
    error_message = "jwt_authorization_scopes must be a list of at most 50 scopes of 1-256 printable ASCII characters without spaces, quotes or backslashes (the OAuth scope-token syntax)."
  }
}

variable "api_throttling_burst_limit" {
  description = "Burst limit (requests) of the HTTP API's default stage."
  type        = number
  default     = 50
  nullable    = false

  validation {
    condition     = var.api_throttling_burst_limit >= 0 && floor(var.api_throttling_burst_limit) == var.api_throttling_burst_limit
    error_message = "api_throttling_burst_limit must be a whole number, 0 or greater."
  }
}

variable "api_throttling_rate_limit" {
  description = "Steady-state rate limit (requests per second) of the HTTP API's default stage."
  type        = number
  default     = 25
  nullable    = false

  validation {
    condition     = var.api_throttling_rate_limit >= 0
    error_message = "api_throttling_rate_limit must be 0 or greater."
  }
}

# ---------------------------------------------------------------------------------------------------
# MCP endpoint (optional, on the HTTP API)
# ---------------------------------------------------------------------------------------------------

variable "create_mcp_endpoint" {
  description = "Serve the memory tool to MCP clients (Claude Code, Claude Desktop, connectors) on the HTTP API: a function `<name_prefix>-mcp` (handler s3memory.aws_lambda.mcp_handler, same zip) behind `ANY /mcp` with the JWT authorizer, and the OAuth protected-resource metadata (RFC 9728) at `GET /.well-known/oauth-protected-resource` and `GET /.well-known/oauth-protected-resource/mcp` without authorization. Requires create_http_api = true."
  type        = bool
  default     = false
  nullable    = false
}

variable "mcp_url" {
  description = "The public https:// URL of the MCP route (S3MEMORY_MCP_URL: the `resource` of the protected-resource metadata, the URL clients are given), when clients reach the API through a custom domain, e.g. \"https://memory.example.com/mcp\". null (default): the API's own endpoint followed by /mcp. Used only with create_mcp_endpoint."
  type        = string
  default     = null

  validation {
    condition     = var.mcp_url == null ? true : can(regex("^https://[^\\s/?#]+(/[^\\s?#]*)?$", var.mcp_url))
    error_message = "mcp_url must be null or an https:// URL without spaces, query or fragment, such as \"https://memory.example.com/mcp\"."
  }
}

variable "mcp_function_memory_size" {
  description = "Memory of the MCP function, in MB (default 512: it imports the MCP SDK and pydantic). With create_mcp_endpoint."
  type        = number
  default     = 512
  nullable    = false

  validation {
    condition     = var.mcp_function_memory_size >= 128 && var.mcp_function_memory_size <= 10240 && floor(var.mcp_function_memory_size) == var.mcp_function_memory_size
    error_message = "mcp_function_memory_size must be a whole number of MB between 128 and 10240."
  }
}

variable "mcp_function_reserved_concurrency" {
  description = "Reserved concurrent executions of the MCP function: null (default) unreserved, 0 disabled, a whole number reserved and its ceiling. The trade-off is memory_function_reserved_concurrency's. With create_mcp_endpoint."
  type        = number
  default     = null

  validation {
    condition     = var.mcp_function_reserved_concurrency == null ? true : (var.mcp_function_reserved_concurrency >= 0 && floor(var.mcp_function_reserved_concurrency) == var.mcp_function_reserved_concurrency)
    error_message = "mcp_function_reserved_concurrency must be null (unreserved: the account's pool, no ceiling) or a whole number, 0 (disabled) or greater (reserved, and its ceiling)."
  }
}

# ---------------------------------------------------------------------------------------------------
# Shared memory mounts (optional, behind the HTTP API)
# ---------------------------------------------------------------------------------------------------

variable "shared_memory_mounts" {
  description = "Shared memories (docs/shared.md) mounted into a user's /memories by the claims of the user's verified token: S3MEMORY_MOUNTS (the grants, JSON-encoded with the keys claim, value, point, memory and mode) on the memory function and the MCP function, never on the agent or expiry function. A request whose verified token has claim `claim` equal to `value` (a list claim: holding it; `scope` or `scp`: a word of it) sees the shared memory `memory` at `point` (\"/memories/<name>\"), read_only unless mode = \"read_write\"; where several grants name one point, read-write wins. Needs create_http_api = true (only a verified token's claims grant a mount) and storage_format = 2 (shared memories exist only in format 2). Checked at plan as the package checks it: point one visible directory just below /memories (a name of 1 to 64 characters, not starting with '.', not node_modules, without '/', control characters, invisible format characters (Unicode Cf) or backslashes, not a percent-encoded '/' or '\\' (%2f, %5c, also as %252f...), not '.' or '..' as %2e or a look-alike character); memory 1 to 63 of a-z, 0-9, '.', '_', '-', starting with a letter or digit; claim and value non-empty printable strings; one memory per point; at most 16 points. What Terraform cannot decode or normalise (a point with other percent-encodings, such as an encoded control character, or with a look-alike of '/' that makes a '.' or '..' segment) the functions refuse at start-up, naming S3MEMORY_MOUNTS. The encoded grants must fit in 3,000 bytes (Lambda allows 4 KB for all of a function's environment). The shared memories' names, the points and the claims are then in plaintext in the functions' configuration and in the Terraform state (the bucket's keys never hold them). [] (default) sets nothing."
  type = list(object({
    claim  = string
    value  = string
    point  = string
    memory = string
    mode   = optional(string, "read_only")
  }))
  default  = []
  nullable = false

  # The first rule refuses a null grant or field; the others check the complete grants only, so
  # that a null is reported once, by its own message.
  validation {
    condition     = length([for grant in var.shared_memory_mounts : grant if try(grant.claim != null && grant.value != null && grant.point != null && grant.memory != null, false)]) == length(var.shared_memory_mounts)
    error_message = "shared_memory_mounts: no grant may be null, nor its claim, value, point or memory (leave mode out for read_only)."
  }

  validation {
    # Python's str.isprintable, as for store_id: no character of the categories C and Z but the space.
    condition = alltrue(flatten([
      for grant in [for grant in var.shared_memory_mounts : grant if try(grant.claim != null && grant.value != null && grant.point != null && grant.memory != null, false)] : [
        for word in [grant.claim, grant.value] : word != "" && !can(regex("[\\p{C}\\p{Z}]", replace(word, " ", "")))
      ]
    ]))
    error_message = "shared_memory_mounts: each grant's claim and value must be non-empty printable strings (no control, format or separator character but the space): the claim a verified token must carry and the value it must hold, such as claim = \"groups\", value = \"acme\"."
  }

  validation {
    # One segment of 1 to 64 code points (regex counts code points, as Python's len; length() would
    # count grapheme clusters): no trailing slash, no deeper level.
    condition = alltrue([
      for grant in [for grant in var.shared_memory_mounts : grant if try(grant.claim != null && grant.value != null && grant.point != null && grant.memory != null, false)] : can(regex("^/memories/[^/]{1,64}$", grant.point))
    ])
    error_message = "shared_memory_mounts: each point must be /memories/<name>, one directory just below /memories whose name is 1 to 64 characters without '/' (no trailing slash, no deeper level), such as \"/memories/team\"."
  }

  validation {
    condition = alltrue([
      for grant in [for grant in var.shared_memory_mounts : grant if try(grant.claim != null && grant.value != null && grant.point != null && grant.memory != null, false)] : !startswith(grant.point, "/memories/.") && grant.point != "/memories/node_modules"
    ])
    error_message = "shared_memory_mounts: a point must not be hidden: a name starting with '.', or node_modules, is hidden from `view /memories`, so the functions refuse it. Choose a visible name, such as \"/memories/team\"."
  }

  validation {
    # What s3memory.core.paths refuses in a path and Terraform can see without decoding: control
    # characters, invisible format characters (Unicode Cf: a mount point is a new name, which
    # core.paths.check_new_name refuses them in), backslashes and their NFKC look-alikes (U+FE68, U+FF3C), percent-encoded '/' and
    # '\' (also behind layers of %25), and a name that is '.' or '..' once percent-decoded or
    # NFKC-normalised (%2e, U+2024, U+FE52, U+FF0E; U+2025 is '..').
    condition = alltrue([
      for grant in [for grant in var.shared_memory_mounts : grant if try(grant.claim != null && grant.value != null && grant.point != null && grant.memory != null, false)] : (
        !can(regex("[\\p{Cc}\\p{Cf}\\\\\\x{FE68}\\x{FF3C}]", grant.point)) &&
        !can(regex("(?i)%(25)*(2f|5c)", grant.point)) &&
        !can(regex("^/memories/((?i:%(25)*2e)|[.\\x{2024}\\x{FE52}\\x{FF0E}]){1,2}$|^/memories/\\x{2025}$", grant.point))
      )
    ])
    error_message = "shared_memory_mounts: a point must not hold a control character, an invisible format character (Unicode Cf, such as U+200B ZERO WIDTH SPACE), a backslash (or U+FE68, U+FF3C) or a percent-encoded '/' or '\\' (%2f, %5c), nor be '.' or '..' spelled otherwise (%2e, U+2024, U+2025, U+FE52, U+FF0E): the functions refuse such paths. Name it with letters, digits, '-' and '_', such as \"/memories/team\"."
  }

  validation {
    condition = alltrue([
      for grant in [for grant in var.shared_memory_mounts : grant if try(grant.claim != null && grant.value != null && grant.point != null && grant.memory != null, false)] : can(regex("^[a-z0-9][a-z0-9._-]{0,62}$", grant.memory))
    ])
    error_message = "shared_memory_mounts: each memory must be a shared memory's name: 1 to 63 of a-z, 0-9, '.', '_' and '-', starting with a letter or digit, such as \"team-acme\"."
  }

  validation {
    condition = alltrue([
      for grant in [for grant in var.shared_memory_mounts : grant if try(grant.claim != null && grant.value != null && grant.point != null && grant.memory != null, false)] : contains(["read_only", "read_write"], grant.mode)
    ])
    error_message = "shared_memory_mounts: a grant's mode must be \"read_only\" (the default, when left out) or \"read_write\"."
  }

  validation {
    condition = alltrue([
      for point, memories in { for grant in [for grant in var.shared_memory_mounts : grant if try(grant.claim != null && grant.value != null && grant.point != null && grant.memory != null, false)] : grant.point => grant.memory... } :
      length(distinct(memories)) == 1
    ])
    error_message = "shared_memory_mounts: one point shows one shared memory, but these points are given more than one: ${jsonencode([for point, memories in { for grant in [for grant in var.shared_memory_mounts : grant if try(grant.claim != null && grant.value != null && grant.point != null && grant.memory != null, false)] : grant.point => grant.memory... } : point if length(distinct(memories)) > 1])}. Give each shared memory its own point."
  }

  validation {
    condition     = length(distinct([for grant in [for grant in var.shared_memory_mounts : grant if try(grant.claim != null && grant.value != null && grant.point != null && grant.memory != null, false)] : grant.point])) <= 16
    error_message = "shared_memory_mounts: at most 16 distinct points (the functions' MAX_MOUNTS: each mount costs `view /memories` one more listing), not ${length(distinct([for grant in [for grant in var.shared_memory_mounts : grant if try(grant.claim != null && grant.value != null && grant.point != null && grant.memory != null, false)] : grant.point]))}. Mount fewer shared memories."
  }
}
