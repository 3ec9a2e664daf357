# The customer-managed key, and who may do what with it. Each grant is a key-policy statement:
#
#   Use (cryptography), only under conditions:
#     1. s3memory's envelope keys: the memory and agent functions' roles, the MCP function's role
#        (when var.create_mcp_endpoint), the operator role (when var.create_operator_role) and
#        var.additional_key_user_arns may call GenerateDataKey/Decrypt only with the encryption
#        context that the library sends: format 1 {"s3memory:user": <user id>,
#        "s3memory:key_version": "<n>"}, calls without s3memory:user are refused; format 2 (var.storage_format) also {"s3memory:store": <store identity>}, and
#        calls for another store are refused (local.envelope_key_condition, store.tf). While a
#        format-1 store moves to format 2 (var.migrating_from_format_1), Decrypt only with the
#        format-1 context (no s3memory:store), for the format-1 users' keys.
#     2. SSE-KMS of the bucket: the same principals, only via S3 in this region, from this account,
#        for this bucket (with bucket keys the encryption context is the bucket ARN).
#     1 and 2 for the expiry function's role (when var.expiry_idle_days), with Decrypt only: it
#        reads and deletes, never writes, so it never needs GenerateDataKey.
#     3. Optionally (var.encrypt_log_groups), CloudWatch Logs, for exactly the module's log groups.
#
#   Administration, no cryptography: var.kms_key_administrator_arns (default: the identity that
#   runs Terraform; for an assumed-role session, its role). They may describe the key, enable and
#   disable it, set rotation, tag it, manage its aliases, revoke grants and schedule or cancel its
#   deletion, and kms:PutKeyPolicy. PutKeyPolicy is the break-glass path, on purpose: a key policy
#   must let someone change it (AWS refuses one that locks out its caller), and whoever can change
#   it can grant themselves Decrypt. No statement grants kms:CreateGrant, nor a wildcard such as
#   kms:Create*, kms:Put* or kms:*, to anyone.
#
#   The account (its root principal, i.e. the IAM policies of this account): Describe*, Get* and
#   List* only. An IAM policy alone, however broad, can neither decrypt, nor create a grant, nor
#   change this policy.
#
# Who can still reach the data besides the key users: a key administrator (by changing this policy)
# and anyone who can change a function's code or configuration (lambda:UpdateFunctionCode,
# lambda:UpdateFunctionConfiguration), or pass or edit its role (iam:PassRole, iam:PutRolePolicy),
# since the roles decrypt every user's memory. That is the break-glass path; CloudTrail logs it
# (PutKeyPolicy, the Lambda and IAM calls, and every Decrypt). Key policies name the IAM roles directly, so the roles are created
# before the key (their inline policies, which mention the key, come after it).

resource "aws_kms_key" "memory" {
  count = var.create_kms_key ? 1 : 0

  description             = "s3memory (${var.name_prefix}): envelope keys and SSE-KMS for bucket ${var.bucket_name}"
  key_usage               = "ENCRYPT_DECRYPT"
  enable_key_rotation     = true
  deletion_window_in_days = var.kms_key_deletion_window_in_days
  policy                  = jsonencode(local.kms_key_policy)
  tags                    = local.tags

  lifecycle {
    precondition {
      condition     = !anytrue([for arn in local.kms_key_administrator_arns : endswith(arn, ":root")])
      error_message = "Terraform runs as the account's root user, which would make the root principal (every IAM policy of the account) a key administrator. Run Terraform as an IAM role or user, or set kms_key_administrator_arns."
    }
    precondition {
      condition     = length(var.kms_key_administrator_arns) == 0 || contains(var.kms_key_administrator_arns, local.kms_caller_arn)
      error_message = "kms_key_administrator_arns must include the identity that runs Terraform (${local.kms_caller_arn}): AWS refuses a key policy that would lock its caller out of PutKeyPolicy, and later applies need it to update the policy."
    }
  }
}

resource "aws_kms_alias" "memory" {
  count = var.create_kms_key ? 1 : 0

  name          = var.kms_key_alias
  target_key_id = aws_kms_key.memory[0].key_id
}

locals {
  # The identity running Terraform; for an assumed-role session, the role behind it (which
  # outlives the session; the session context resolves its path).
  kms_caller_arn = one(data.aws_iam_session_context.current[*].issuer_arn)

  kms_key_administrator_arns = length(var.kms_key_administrator_arns) > 0 ? var.kms_key_administrator_arns : [local.kms_caller_arn]

  # Administration without cryptography and without CreateGrant; PutKeyPolicy has its own statement.
  kms_key_administration_actions = [
    "kms:CancelKeyDeletion",
    "kms:CreateAlias",
    "kms:DeleteAlias",
    "kms:DescribeKey",
    "kms:DisableKey",
    "kms:DisableKeyRotation",
    "kms:EnableKey",
    "kms:EnableKeyRotation",
    "kms:GetKeyPolicy",
    "kms:GetKeyRotationStatus",
    "kms:ListGrants",
    "kms:ListKeyPolicies",
    "kms:ListKeyRotations",
    "kms:ListResourceTags",
    "kms:RevokeGrant",
    "kms:RotateKeyOnDemand",
    "kms:ScheduleKeyDeletion",
    "kms:TagResource",
    "kms:UntagResource",
    "kms:UpdateAlias",
    "kms:UpdateKeyDescription",
  ]

  # The roles of the functions that serve the memory (all but the expiry function's: below).
  kms_key_user_arns = concat(
    [for key in local.function_keys : aws_iam_role.this[key].arn if local.function_enabled[key] && key != "expiry"],
    aws_iam_role.operator[*].arn,
    var.additional_key_user_arns,
  )

  kms_log_group_arns = [
    for key in concat(local.function_keys, ["api"]) : local.log_group_arns[key] if contains(keys(local.log_groups), key)
  ]

  # The module's key policy: administration, then the key's users.
  kms_key_policy = {
    Version   = "2012-10-17"
    Statement = concat(local.kms_key_administration_statements, local.kms_key_user_statements)
  }

  kms_key_administration_statements = [
    {
      # IAM policies of the account may read the key's metadata, nothing more.
      Sid       = "ReadOnlyByAccount"
      Effect    = "Allow"
      Principal = { AWS = "arn:${local.partition}:iam::${local.account_id}:root" }
      Action    = ["kms:Describe*", "kms:Get*", "kms:List*"]
      # In a key policy, "*" means "this key".
      Resource = "*"
    },
    {
      Sid       = "KeyAdministration"
      Effect    = "Allow"
      Principal = { AWS = local.kms_key_administrator_arns }
      Action    = local.kms_key_administration_actions
      Resource  = "*"
    },
    {
      # Break-glass: whoever may change the key policy may grant themselves Decrypt. Every
      # PutKeyPolicy call is logged in CloudTrail.
      Sid       = "KeyPolicyChangeBreakGlass"
      Effect    = "Allow"
      Principal = { AWS = local.kms_key_administrator_arns }
      Action    = ["kms:PutKeyPolicy"]
      Resource  = "*"
    },
  ]

  # The key's users: what the module's key policy grants besides administration, and what a key of
  # one's own (create_kms_key = false, kms_key_arn) must grant (output required_key_policy_statements).
  kms_key_user_statements = concat(
    [
      {
        Sid       = "EnvelopeKeysWithS3memoryContext"
        Effect    = "Allow"
        Principal = { AWS = local.kms_key_user_arns }
        Action    = ["kms:GenerateDataKey", "kms:Decrypt"]
        Resource  = "*"
        Condition = local.envelope_key_condition
      },
    ],
    # Format 2 while format-1 users are moved: their format-1 data keys, Decrypt only (store.tf).
    local.format_1_migration ? [
      {
        Sid       = "EnvelopeKeysFormat1Migration"
        Effect    = "Allow"
        Principal = { AWS = local.kms_key_user_arns }
        Action    = "kms:Decrypt"
        Resource  = "*"
        Condition = local.format_1_decrypt_condition
      },
    ] : [],
    [
      {
        Sid       = "BucketSseViaS3"
        Effect    = "Allow"
        Principal = { AWS = local.kms_key_user_arns }
        Action    = ["kms:GenerateDataKey", "kms:Decrypt"]
        Resource  = "*"
        Condition = local.key_policy_via_s3_condition
      },
    ],
    # The expiry function's role (when it exists) unwraps users' data keys; it never makes one.
    flatten([for key, role in aws_iam_role.this : concat([
      {
        Sid       = "ExpiryDecryptWithS3memoryContext"
        Effect    = "Allow"
        Principal = { AWS = role.arn }
        Action    = "kms:Decrypt"
        Resource  = "*"
        Condition = local.envelope_key_condition
      },
      ], local.format_1_migration ? [
      {
        Sid       = "ExpiryDecryptFormat1Migration"
        Effect    = "Allow"
        Principal = { AWS = role.arn }
        Action    = "kms:Decrypt"
        Resource  = "*"
        Condition = local.format_1_decrypt_condition
      },
      ] : [], [
      {
        Sid       = "ExpiryDecryptViaS3"
        Effect    = "Allow"
        Principal = { AWS = role.arn }
        Action    = "kms:Decrypt"
        Resource  = "*"
        Condition = local.key_policy_via_s3_condition
      },
    ]) if key == "expiry"]),
    var.encrypt_log_groups ? [
      {
        Sid       = "CloudWatchLogsForModuleLogGroups"
        Effect    = "Allow"
        Principal = { Service = "logs.${local.region}.${local.dns_suffix}" }
        Action = [
          "kms:Decrypt*",
          "kms:Describe*",
          "kms:Encrypt*",
          "kms:GenerateDataKey*",
          "kms:ReEncrypt*",
        ]
        Resource = "*"
        Condition = {
          ArnEquals = { "kms:EncryptionContext:aws:logs:arn" = local.kms_log_group_arns }
        }
      },
    ] : [],
  )
}
