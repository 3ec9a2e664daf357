# Optional: a dead-letter target for the functions that can be invoked asynchronously, and a VPC for
# every function. Nothing here unless var.dead_letter_target_arn or var.vpc_subnet_ids is set.
#
# Dead letters. Lambda retries a failed asynchronous invocation, then sends the event to the target
# with the function's role: the expiry function (invoked asynchronously by its schedule) and the
# memory and agent functions (a direct invoker may use InvocationType Event) get it; the MCP
# function, which API Gateway invokes synchronously, does not. The roles may send to exactly that
# queue or topic, and use its key (var.dead_letter_kms_key_arn) only through SQS or SNS.
#
# VPC. Every function's network interfaces in var.vpc_subnet_ids with var.vpc_security_group_ids;
# Lambda creates and deletes them with the function's role, so the roles get what the AWS managed
# policy AWSLambdaVPCAccessExecutionRole gives, but its logs permissions (each role already writes
# to its own log group): the describe actions, which allow no resource-level restriction, on "*", and
# the interface changes on EC2 resources of this region only (a shared VPC's subnets may belong to
# another account).

locals {
  dead_letter_enabled = var.dead_letter_target_arn != null
  # The functions that get the target (and their roles the statements for it): not the MCP function.
  dead_letter_functions = ["memory", "agent", "expiry"]
  vpc_enabled           = length(var.vpc_subnet_ids) > 0

  # "sqs" or "sns": the service of the target's ARN.
  dead_letter_service = local.dead_letter_enabled ? split(":", var.dead_letter_target_arn)[2] : null

  dead_letter_statements = concat(
    local.dead_letter_enabled ? [
      {
        Sid      = "DeadLetterTarget"
        Effect   = "Allow"
        Action   = local.dead_letter_service == "sqs" ? "sqs:SendMessage" : "sns:Publish"
        Resource = var.dead_letter_target_arn
      },
    ] : [],
    local.dead_letter_enabled && var.dead_letter_kms_key_arn != null ? [
      {
        Sid      = "DeadLetterTargetKey"
        Effect   = "Allow"
        Action   = ["kms:GenerateDataKey", "kms:Decrypt"]
        Resource = var.dead_letter_kms_key_arn
        Condition = {
          StringEquals = { "kms:ViaService" = "${local.dead_letter_service}.${local.region}.${local.dns_suffix}" }
        }
      },
    ] : [],
  )

  vpc_statements = concat(
    local.vpc_enabled ? [
      {
        Sid      = "VpcNetworkInterfacesDescribe"
        Effect   = "Allow"
        Action   = ["ec2:DescribeNetworkInterfaces", "ec2:DescribeSubnets"]
        Resource = "*"
      },
    ] : [],
    local.vpc_enabled ? [
      {
        Sid    = "VpcNetworkInterfaces"
        Effect = "Allow"
        Action = [
          "ec2:CreateNetworkInterface",
          "ec2:DeleteNetworkInterface",
          "ec2:AssignPrivateIpAddresses",
          "ec2:UnassignPrivateIpAddresses",
        ]
        Resource = "arn:${local.partition}:ec2:${local.region}:*:*"
      },
    ] : [],
  )
}
