data "aws_caller_identity" "current" {}

data "aws_region" "current" {}

data "aws_partition" "current" {}

# The IAM role (or user) behind the identity running Terraform: the default key administrator.
data "aws_iam_session_context" "current" {
  count = var.create_kms_key ? 1 : 0

  arn = data.aws_caller_identity.current.arn
}

locals {
  account_id = data.aws_caller_identity.current.account_id
  region     = data.aws_region.current[local.region_attribute]
  partition  = data.aws_partition.current.partition
  dns_suffix = data.aws_partition.current.dns_suffix

  # The provider's region. Provider 6 calls it `region` and deprecates `name` (6.0) and `id` (6.47);
  # provider 5 has no `region`. Read by a computed key, so that no reference names an attribute one
  # major lacks (a static error, which try() cannot catch) or deprecates (a warning).
  region_attribute = contains(keys(data.aws_region.current), "region") ? "region" : "name"

  # The bucket and the key: the module's own, or existing ones (bring your own). The created bucket
  # by reference, so that what names it (the functions) comes after it. The key's ARN is "" only
  # with create_kms_key = false and no kms_key_arn, which the memory function's precondition
  # refuses (lambda.tf).
  memory_bucket_name = var.create_bucket ? aws_s3_bucket.memory[0].bucket : var.bucket_name
  kms_key_arn        = var.create_kms_key ? aws_kms_key.memory[0].arn : (var.kms_key_arn == null ? "" : var.kms_key_arn)

  # ARNs are built from names (not read back from resources) so that policies are known at plan
  # time, and so that the KMS key policy can name log groups before they exist.
  bucket_arn         = "arn:${local.partition}:s3:::${var.bucket_name}"
  memory_objects_arn = "${local.bucket_arn}/${var.memory_prefix}*"

  # The agent function, its role, policy and log group exist only when this is true: by default when
  # it has an Anthropic API key secret to read (var.create_agent_function).
  agent_enabled = var.create_agent_function != null ? var.create_agent_function : var.anthropic_api_key_secret_arn != null

  # Idle expiry (expiry.tf) exists only when expiry_idle_days is set.
  expiry_enabled = var.expiry_idle_days != null

  # The MCP endpoint: its function, role and log group with create_mcp_endpoint (lambda.tf, iam.tf,
  # logs.tf), its integration, routes and permissions on the HTTP API (api.tf). It needs the API: the
  # MCP function's precondition refuses create_mcp_endpoint without create_http_api, and the API's
  # resources are counted on both, so that the precondition's message is the plan's only error.
  mcp_enabled = var.create_mcp_endpoint
  mcp_on_api  = var.create_mcp_endpoint && var.create_http_api

  # Every function by its key, whether the variables create it. The key names the function
  # (<name_prefix>-<key>), its role (<name>-lambda), its policy and its log group, and is the key of
  # each of them in the for_each of lambda.tf, iam.tf and logs.tf. From the variables alone, so that
  # every for_each over them is known at plan and the key policy can name the roles (kms.tf).
  function_enabled = {
    memory = true
    agent  = local.agent_enabled
    expiry = local.expiry_enabled
    mcp    = local.mcp_enabled
  }
  # The order in which the key policy names the functions' roles and log groups.
  function_keys  = ["memory", "agent", "expiry", "mcp"]
  function_names = { for key in local.function_keys : key => "${var.name_prefix}-${key}" }
  # The functions the module creates: their names by key.
  functions = { for key, name in local.function_names : key => name if local.function_enabled[key] }

  # The log groups: each function's, and the HTTP API's access log (with create_http_api).
  log_group_names = merge(
    { for key, name in local.function_names : key => "/aws/lambda/${name}" },
    { api = "/aws/apigateway/${var.name_prefix}-http-api" },
  )
  log_groups = {
    for key, name in local.log_group_names : key => name if lookup(local.function_enabled, key, var.create_http_api)
  }

  # The schedule's role may invoke exactly this function (unqualified: no version or alias).
  expiry_function_arn = "arn:${local.partition}:lambda:${local.region}:${local.account_id}:function:${local.function_names.expiry}"

  log_group_arn_prefix    = "arn:${local.partition}:logs:${local.region}:${local.account_id}:log-group:"
  log_group_arns          = { for key, name in local.log_group_names : key => "${local.log_group_arn_prefix}${name}" }
  s3_kms_via_service      = "s3.${local.region}.${local.dns_suffix}"
  secrets_kms_via_service = "secretsmanager.${local.region}.${local.dns_suffix}"
  # The roles' grants of the key through S3 (bucket SSE): on this bucket only.
  via_s3_condition = {
    StringEquals = { "kms:ViaService" = local.s3_kms_via_service }
    StringLike   = { "kms:EncryptionContext:aws:s3:arn" = [local.bucket_arn, local.memory_objects_arn] }
  }
  # The key policy's grants through S3: the same, for this account's calls only.
  key_policy_via_s3_condition = {
    StringEquals = {
      "kms:ViaService"    = local.s3_kms_via_service
      "kms:CallerAccount" = local.account_id
    }
    StringLike = {
      "kms:EncryptionContext:aws:s3:arn" = [local.bucket_arn, local.memory_objects_arn]
    }
  }

  # The encryption-context key that s3memory's KMSKeyProvider always sends with
  # GenerateDataKey/Decrypt (format 1: {"s3memory:user": <user id>, "s3memory:key_version": "<n>"};
  # format 2 adds s3memory:store, and s3memory:user is the namespace token or "store-key": store.tf;
  # either format's record of what the S3 server enforces: s3memory:store and "server-record").
  encryption_context_user_key = "kms:EncryptionContext:s3memory:user"

  tags = merge({ "s3memory:module" = "s3memory" }, var.tags)
}
