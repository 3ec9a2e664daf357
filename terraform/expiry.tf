# Idle expiry, off by default: only with var.expiry_idle_days. An EventBridge Scheduler schedule
# invokes the expiry function (lambda.tf; its role in iam.tf, its log group in logs.tf) on
# var.expiry_schedule_expression with the input {}. The function deletes the memory of users idle
# for expiry_idle_days and never removes a user's wrapped data keys. It deletes current versions
# only: on the versioned bucket that adds delete markers, so the data stays recoverable until the
# lifecycle rule removes noncurrent versions (noncurrent_version_expiration_days).
#
# The schedule calls Lambda with its own execution role, trusted by EventBridge Scheduler for this
# account only, and allowed nothing but lambda:InvokeFunction on the expiry function (a role, not a
# Lambda resource policy, is how Scheduler reaches its target).

resource "aws_iam_role" "expiry_scheduler" {
  count = local.expiry_enabled ? 1 : 0

  name                 = "${local.function_names.expiry}-scheduler"
  path                 = var.iam_role_path
  description          = "Role of the schedule that invokes the s3memory expiry function ${local.function_names.expiry}"
  assume_role_policy   = jsonencode(local.expiry_scheduler_assume_role_policy)
  permissions_boundary = var.iam_permissions_boundary_arn
  tags                 = local.tags
}

resource "aws_iam_role_policy" "expiry_scheduler" {
  count = local.expiry_enabled ? 1 : 0

  name   = "s3memory-expiry-schedule"
  role   = aws_iam_role.expiry_scheduler[0].id
  policy = jsonencode(local.expiry_scheduler_role_policy)
}

resource "aws_scheduler_schedule" "expiry" {
  #checkov:skip=CKV_AWS_297:The schedule's only payload is the constant input {}; a customer-managed key would need Scheduler and its role added to the memory key's policy for nothing secret.
  count = local.expiry_enabled ? 1 : 0

  name                = local.function_names.expiry
  description         = "s3memory: runs the expiry function ${local.function_names.expiry} (users idle for ${var.expiry_idle_days} days)"
  schedule_expression = var.expiry_schedule_expression

  # Exactly at the scheduled time (UTC), no flexible window.
  flexible_time_window {
    mode = "OFF"
  }

  target {
    arn      = aws_lambda_function.this["expiry"].arn
    role_arn = aws_iam_role.expiry_scheduler[0].arn
    input    = jsonencode({})
  }

  # The role must be allowed to invoke the function before the first run.
  depends_on = [aws_iam_role_policy.expiry_scheduler]
}

locals {
  expiry_scheduler_assume_role_policy = {
    Version = "2012-10-17"
    Statement = [
      {
        Sid       = "SchedulerAssumeRole"
        Effect    = "Allow"
        Principal = { Service = "scheduler.amazonaws.com" }
        Action    = "sts:AssumeRole"
        # Only schedules of this account (confused-deputy protection).
        Condition = {
          StringEquals = { "aws:SourceAccount" = local.account_id }
        }
      },
    ]
  }

  expiry_scheduler_role_policy = {
    Version = "2012-10-17"
    Statement = [
      {
        Sid      = "InvokeExpiryFunction"
        Effect   = "Allow"
        Action   = "lambda:InvokeFunction"
        Resource = local.expiry_function_arn
      },
    ]
  }
}
