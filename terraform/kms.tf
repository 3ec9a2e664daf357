# The customer-managed key. It serves three purposes, each fenced by its own key-policy statement:
#   1. s3memory's envelope keys: the library calls GenerateDataKey/Decrypt with the encryption
#      context {"s3memory:user": <user id>, "s3memory:key_version": "<n>"}. Calls without the
#      s3memory:user context key are refused.
#   2. SSE-KMS of the bucket: S3 calls KMS on behalf of the role that reads or writes an object.
#      With bucket keys the encryption context is the bucket ARN; such calls are allowed only via
#      S3 in this region and only for this bucket.
#   3. Optionally, encryption of the module's CloudWatch log groups, for exactly those groups.
#
# The account root principal (i.e. IAM administrators of this account) may administer the key but
# not use it for cryptography: nobody decrypts memories except the principals listed here, however
# broad their IAM policies are. Key policies name the IAM roles directly, so the roles are created
# before the key (their inline policies, which mention the key, come after it).

resource "aws_kms_key" "memory" {
  description             = "s3memory (${var.name_prefix}): envelope keys and SSE-KMS for bucket ${var.bucket_name}"
  key_usage               = "ENCRYPT_DECRYPT"
  enable_key_rotation     = true
  deletion_window_in_days = var.kms_key_deletion_window_in_days
  policy                  = jsonencode(local.kms_key_policy)
  tags                    = local.tags
}

resource "aws_kms_alias" "memory" {
  name          = var.kms_key_alias
  target_key_id = aws_kms_key.memory.key_id
}

locals {
  kms_key_user_arns = concat(
    [aws_iam_role.memory.arn, aws_iam_role.agent.arn],
    var.additional_key_user_arns,
  )

  kms_log_group_arns = concat(
    [local.memory_log_group_arn, local.agent_log_group_arn],
    var.create_http_api ? [local.api_log_group_arn] : [],
  )

  kms_key_policy = {
    Version = "2012-10-17"
    Statement = concat(
      [
        {
          Sid       = "KeyAdministrationByAccount"
          Effect    = "Allow"
          Principal = { AWS = "arn:${local.partition}:iam::${local.account_id}:root" }
          Action = [
            "kms:CancelKeyDeletion",
            "kms:Create*",
            "kms:Delete*",
            "kms:Describe*",
            "kms:Disable*",
            "kms:Enable*",
            "kms:Get*",
            "kms:List*",
            "kms:Put*",
            "kms:Revoke*",
            "kms:RotateKeyOnDemand",
            "kms:ScheduleKeyDeletion",
            "kms:TagResource",
            "kms:UntagResource",
            "kms:Update*",
          ]
          # In a key policy, "*" means "this key".
          Resource = "*"
        },
        {
          Sid       = "EnvelopeKeysWithS3memoryContext"
          Effect    = "Allow"
          Principal = { AWS = local.kms_key_user_arns }
          Action    = ["kms:GenerateDataKey", "kms:Decrypt"]
          Resource  = "*"
          Condition = {
            Null = { (local.encryption_context_user_key) = "false" }
          }
        },
        {
          Sid       = "BucketSseViaS3"
          Effect    = "Allow"
          Principal = { AWS = local.kms_key_user_arns }
          Action    = ["kms:GenerateDataKey", "kms:Decrypt"]
          Resource  = "*"
          Condition = {
            StringEquals = {
              "kms:ViaService"    = local.s3_kms_via_service
              "kms:CallerAccount" = local.account_id
            }
            StringLike = {
              "kms:EncryptionContext:aws:s3:arn" = [local.bucket_arn, local.memory_objects_arn]
            }
          }
        },
      ],
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
}
