# Log groups are created here (not by Lambda on first invocation) so that retention, encryption and
# tags are managed, the functions' roles need no logs:CreateLogGroup, and `terraform destroy`
# removes them.

resource "aws_cloudwatch_log_group" "memory" {
  #checkov:skip=CKV_AWS_338:Retention is the caller's choice through var.log_retention_in_days (default 30 days); memory-function logs carry no audit duty that would need a year.
  name              = local.memory_log_group_name
  retention_in_days = var.log_retention_in_days
  kms_key_id        = var.encrypt_log_groups ? local.kms_key_arn : null
  tags              = local.tags
}

resource "aws_cloudwatch_log_group" "agent" {
  #checkov:skip=CKV_AWS_338:Retention is the caller's choice through var.log_retention_in_days (default 30 days).
  count = local.agent_enabled ? 1 : 0

  name              = local.agent_log_group_name
  retention_in_days = var.log_retention_in_days
  kms_key_id        = var.encrypt_log_groups ? local.kms_key_arn : null
  tags              = local.tags
}

resource "aws_cloudwatch_log_group" "expiry" {
  #checkov:skip=CKV_AWS_338:Retention is the caller's choice through var.log_retention_in_days (default 30 days).
  count = local.expiry_enabled ? 1 : 0

  name              = local.expiry_log_group_name
  retention_in_days = var.log_retention_in_days
  kms_key_id        = var.encrypt_log_groups ? local.kms_key_arn : null
  tags              = local.tags
}

resource "aws_cloudwatch_log_group" "mcp" {
  #checkov:skip=CKV_AWS_338:Retention is the caller's choice through var.log_retention_in_days (default 30 days).
  count = local.mcp_enabled ? 1 : 0

  name              = local.mcp_log_group_name
  retention_in_days = var.log_retention_in_days
  kms_key_id        = var.encrypt_log_groups ? local.kms_key_arn : null
  tags              = local.tags
}

resource "aws_cloudwatch_log_group" "api" {
  #checkov:skip=CKV_AWS_338:Retention is the caller's choice through var.log_retention_in_days (default 30 days).
  count = var.create_http_api ? 1 : 0

  name              = local.api_log_group_name
  retention_in_days = var.log_retention_in_days
  kms_key_id        = var.encrypt_log_groups ? local.kms_key_arn : null
  tags              = local.tags
}
