# Log groups are created here (not by Lambda on first invocation) so that retention, encryption and
# tags are managed, the functions' roles need no logs:CreateLogGroup, and `terraform destroy`
# removes them. One per function (/aws/lambda/<name>), and the HTTP API's access log with
# create_http_api: local.log_groups (data.tf), by the function's key and "api".

resource "aws_cloudwatch_log_group" "this" {
  #checkov:skip=CKV_AWS_338:Retention is the caller's choice through var.log_retention_in_days (default 30 days); the functions' and the API's logs carry no audit duty that would need a year.
  for_each = local.log_groups

  name              = each.value
  retention_in_days = var.log_retention_in_days
  kms_key_id        = var.encrypt_log_groups ? local.kms_key_arn : null
  tags              = local.tags
}
