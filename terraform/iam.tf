# One execution role per function (the agent's only with local.agent_enabled: create_agent_function,
# by default when an Anthropic API key secret is set). The memory, agent and MCP roles may read, write, list and delete objects only under
# memory_prefix, and use the KMS key only (a) with s3memory's encryption context and (b) through S3
# for this bucket. Each may write only to its own log group. Only the agent role may read the
# Anthropic API key secret, and only when one is configured. No wildcard actions anywhere.
#
# Optionally (create_mcp_endpoint), the MCP function's role: the memory function's statements on the
# bucket and the key (local.memory_store_statements), and its own log group.
#
# Optionally (create_operator_role), a role for the operator commands of the `s3memory` CLI
# (users, ls, cat, export, import, verify, erase, history, restore, redact), assumed by
# operator_trusted_principal_arns only (with MFA by default). It has what the serving roles have
# plus what only an operator needs: the bucket's versioning status, and listing, reading and
# removing object versions. The serving roles never get those.
#
# Optionally (expiry_idle_days), the expiry function's role: it lists, reads and deletes under
# memory_prefix and may only decrypt with the key; it writes nothing and touches no version. The
# schedule that invokes it has its own role, in expiry.tf.

# The functions' execution roles, by the function's key (local.functions, data.tf).
resource "aws_iam_role" "this" {
  for_each = local.functions

  name                 = "${each.value}-lambda"
  path                 = var.iam_role_path
  description          = "Execution role of the s3memory ${each.key == "mcp" ? "MCP" : each.key} function ${each.value}"
  assume_role_policy   = jsonencode(local.lambda_assume_role_policy)
  permissions_boundary = var.iam_permissions_boundary_arn
  tags                 = local.tags
}

# The operator role: for the people (or the automation) who run the `s3memory` operator commands.
resource "aws_iam_role" "operator" {
  count = var.create_operator_role ? 1 : 0

  name                 = "${var.name_prefix}-operator"
  path                 = var.iam_role_path
  description          = "Operator role of s3memory ${var.name_prefix}: the s3memory operator commands on every user's memory"
  assume_role_policy   = jsonencode(local.operator_assume_role_policy)
  max_session_duration = var.operator_role_max_session_duration
  permissions_boundary = var.iam_permissions_boundary_arn
  tags                 = local.tags

  lifecycle {
    precondition {
      condition     = length(var.operator_trusted_principal_arns) > 0
      error_message = "create_operator_role = true needs operator_trusted_principal_arns: the IAM role or user ARNs allowed to assume the operator role (it reads and erases every user's memory, so nobody is trusted by default)."
    }
  }
}

resource "aws_iam_role_policy" "this" {
  for_each = local.functions

  name   = "s3memory-${each.key}-function"
  role   = aws_iam_role.this[each.key].id
  policy = jsonencode(local.function_role_policies[each.key])
}

resource "aws_iam_role_policy" "operator" {
  count = var.create_operator_role ? 1 : 0

  name   = "s3memory-operator"
  role   = aws_iam_role.operator[0].id
  policy = jsonencode(local.operator_role_policy)
}

locals {
  lambda_assume_role_policy = {
    Version = "2012-10-17"
    Statement = [
      {
        Sid       = "LambdaAssumeRole"
        Effect    = "Allow"
        Principal = { Service = "lambda.amazonaws.com" }
        Action    = "sts:AssumeRole"
      },
    ]
  }

  # Only the listed principals, each with sts:AssumeRole, and by default only with MFA.
  operator_assume_role_policy = {
    Version = "2012-10-17"
    Statement = [
      merge(
        {
          Sid       = "TrustedOperators"
          Effect    = "Allow"
          Principal = { AWS = var.operator_trusted_principal_arns }
          Action    = "sts:AssumeRole"
        },
        var.operator_require_mfa ? { Condition = { Bool = { "aws:MultiFactorAuthPresent" = "true" } } } : {},
      ),
    ]
  }

  operator_role_policy = {
    Version = "2012-10-17"
    Statement = concat(
      [
        {
          # ListObjectsV2 (users, ls, export, verify, and the memory tool's own listings) and
          # ListObjectVersions (erase, history, restore, redact), under the prefix only. The
          # prefix itself is the `users` listing (with the delimiter "/"); "<prefix>*" already
          # matches it ("*" matches nothing too), it is named to say so.
          Sid      = "ListMemoryPrefixAndVersions"
          Effect   = "Allow"
          Action   = ["s3:ListBucket", "s3:ListBucketVersions"]
          Resource = local.bucket_arn
          Condition = {
            StringLike = { "s3:prefix" = [var.memory_prefix, "${var.memory_prefix}*"] }
          }
        },
        {
          # history, restore and redact first check that the bucket keeps versions. Bucket
          # configuration only, no object: s3:prefix does not apply to it.
          Sid      = "BucketVersioningStatus"
          Effect   = "Allow"
          Action   = "s3:GetBucketVersioning"
          Resource = local.bucket_arn
        },
        {
          # Get/Put/Delete: what the memory tool does (cat, export, import, verify).
          # GetObjectVersion: reading an earlier version (history, restore).
          # DeleteObjectVersion: removing versions and delete markers for good (erase, redact).
          Sid    = "MemoryObjectsAndVersions"
          Effect = "Allow"
          Action = [
            "s3:GetObject",
            "s3:GetObjectVersion",
            "s3:PutObject",
            "s3:DeleteObject",
            "s3:DeleteObjectVersion",
          ]
          Resource = local.memory_objects_arn
        },
      ],
      local.key_use_statements,
    )
  }

  # Listing under the prefix, for every function that reads the store.
  list_memory_prefix_statement = {
    Sid      = "ListMemoryPrefix"
    Effect   = "Allow"
    Action   = "s3:ListBucket"
    Resource = local.bucket_arn
    Condition = {
      StringLike = { "s3:prefix" = "${var.memory_prefix}*" }
    }
  }

  # What the memory, agent and MCP functions need to run s3memory against the bucket.
  memory_store_statements = concat(
    [
      {
        Sid    = "MemoryObjects"
        Effect = "Allow"
        # CopyObject (a format-2 rename) needs Get on its source and Put on its target; HeadObject
        # needs Get; DeleteObjects needs Delete. No tagging: nothing s3memory does reads or sets tags.
        Action   = ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"]
        Resource = local.memory_objects_arn
      },
      local.list_memory_prefix_statement,
    ],
    local.key_use_statements,
  )

  # The key, used as the serving roles and the operator role use it.
  key_use_statements = concat([
    {
      Sid       = "EnvelopeKeysWithS3memoryContext"
      Effect    = "Allow"
      Action    = ["kms:GenerateDataKey", "kms:Decrypt"]
      Resource  = local.kms_key_arn
      Condition = local.envelope_key_condition
    },
    ], local.format_1_migration_statements, [
    {
      # SSE-KMS: S3 calls KMS with the caller's credentials when an object is written or read.
      # Restricting by kms:ViaService and the S3 encryption context keeps these grants from being
      # usable for anything but this bucket, so the envelope-key statement above stays the only
      # way to get s3memory data keys.
      Sid       = "BucketSseViaS3"
      Effect    = "Allow"
      Action    = ["kms:GenerateDataKey", "kms:Decrypt"]
      Resource  = local.kms_key_arn
      Condition = local.via_s3_condition
    },
  ])

  # Format 2 while format-1 users are moved (store.tf): their format-1 data keys, Decrypt only.
  format_1_migration_statements = local.format_1_migration ? [
    {
      Sid       = "DecryptFormat1Migration"
      Effect    = "Allow"
      Action    = "kms:Decrypt"
      Resource  = local.kms_key_arn
      Condition = local.format_1_decrypt_condition
    },
  ] : []

  xray_statements = var.tracing_mode == "Active" ? [
    {
      # X-Ray offers no resource-level permissions for these two actions.
      Sid      = "XRayWrite"
      Effect   = "Allow"
      Action   = ["xray:PutTraceSegments", "xray:PutTelemetryRecords"]
      Resource = "*"
    },
  ] : []

  # Each function's role policy: what it needs of the store (local.function_statements), its own log
  # group, its extra statements (the agent's secret), then what it is given: the dead-letter target
  # (the functions of local.dead_letter_functions, network.tf), the VPC and X-Ray.
  function_role_policies = {
    for key, statements in local.function_statements : key => {
      Version = "2012-10-17"
      Statement = concat(
        statements.store,
        [
          {
            Sid      = "OwnLogGroup"
            Effect   = "Allow"
            Action   = ["logs:CreateLogStream", "logs:PutLogEvents"]
            Resource = "${local.log_group_arns[key]}:*"
          },
        ],
        statements.extra,
        [for statement in local.dead_letter_statements : statement if contains(local.dead_letter_functions, key)],
        local.vpc_statements,
        local.xray_statements,
      )
    }
  }

  function_statements = {
    # The memory function, and the MCP function, which serves the memory tool as it does.
    memory = { store = local.memory_store_statements, extra = [] }
    mcp    = { store = local.memory_store_statements, extra = [] }

    # Idle expiry: find idle users and delete their memory (current versions only: on the versioned
    # bucket a delete adds a delete marker). No PutObject, no version permission, and
    # Decrypt without GenerateDataKey: it never writes, so it never needs a new data key.
    expiry = {
      store = concat(
        [
          local.list_memory_prefix_statement,
          {
            Sid      = "ReadAndDeleteMemoryObjects"
            Effect   = "Allow"
            Action   = ["s3:GetObject", "s3:DeleteObject"]
            Resource = local.memory_objects_arn
          },
          {
            # A user's wrapped data key, unwrapped with the s3memory encryption context.
            Sid       = "DecryptWithS3memoryContext"
            Effect    = "Allow"
            Action    = "kms:Decrypt"
            Resource  = local.kms_key_arn
            Condition = local.envelope_key_condition
          },
        ],
        local.format_1_migration_statements,
        [
          {
            # SSE-KMS of the objects it reads, through S3 for this bucket only.
            Sid       = "DecryptViaS3"
            Effect    = "Allow"
            Action    = "kms:Decrypt"
            Resource  = local.kms_key_arn
            Condition = local.via_s3_condition
          },
        ],
      )
      extra = []
    }

    # The agent: the memory function's statements, and the Anthropic API key secret when one is set.
    agent = {
      store = local.memory_store_statements
      extra = concat(
        var.anthropic_api_key_secret_arn == null ? [] : [
          {
            Sid      = "AnthropicApiKeySecret"
            Effect   = "Allow"
            Action   = "secretsmanager:GetSecretValue"
            Resource = var.anthropic_api_key_secret_arn
          },
        ],
        var.anthropic_api_key_secret_arn == null || var.anthropic_api_key_secret_kms_key_arn == null ? [] : [
          {
            Sid      = "AnthropicApiKeySecretDecrypt"
            Effect   = "Allow"
            Action   = "kms:Decrypt"
            Resource = var.anthropic_api_key_secret_kms_key_arn
            Condition = {
              StringEquals = { "kms:ViaService" = local.secrets_kms_via_service }
            }
          },
        ],
      )
    }
  }
}
