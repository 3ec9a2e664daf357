# Resources that became optional, or one for_each, keep their state: without these, an upgrade from
# a version where they were single (or counted) resources would plan to destroy each one and create
# it again at its new address. A chain of moves is followed to its end: aws_iam_role.agent moves to
# aws_iam_role.agent[0], then to aws_iam_role.this["agent"].

# The agent function (create_agent_function).
moved {
  from = aws_iam_role.agent
  to   = aws_iam_role.agent[0]
}

moved {
  from = aws_iam_role_policy.agent
  to   = aws_iam_role_policy.agent[0]
}

moved {
  from = aws_cloudwatch_log_group.agent
  to   = aws_cloudwatch_log_group.agent[0]
}

moved {
  from = aws_lambda_function.agent
  to   = aws_lambda_function.agent[0]
}

# The bucket (create_bucket) and the key (create_kms_key). Losing the key's state would
# schedule it for deletion, and with it every user's memory: these blocks are not optional.
moved {
  from = aws_s3_bucket.memory
  to   = aws_s3_bucket.memory[0]
}

moved {
  from = aws_s3_bucket_ownership_controls.memory
  to   = aws_s3_bucket_ownership_controls.memory[0]
}

moved {
  from = aws_s3_bucket_public_access_block.memory
  to   = aws_s3_bucket_public_access_block.memory[0]
}

moved {
  from = aws_s3_bucket_versioning.memory
  to   = aws_s3_bucket_versioning.memory[0]
}

moved {
  from = aws_s3_bucket_server_side_encryption_configuration.memory
  to   = aws_s3_bucket_server_side_encryption_configuration.memory[0]
}

moved {
  from = aws_s3_bucket_lifecycle_configuration.memory
  to   = aws_s3_bucket_lifecycle_configuration.memory[0]
}

moved {
  from = aws_s3_bucket_policy.memory
  to   = aws_s3_bucket_policy.memory[0]
}

moved {
  from = aws_kms_key.memory
  to   = aws_kms_key.memory[0]
}

moved {
  from = aws_kms_alias.memory
  to   = aws_kms_alias.memory[0]
}

# The functions, their roles, policies and log groups, and the API's log group: one resource
# each, by the function's key (data.tf, local.functions).

moved {
  from = aws_lambda_function.memory
  to   = aws_lambda_function.this["memory"]
}

moved {
  from = aws_lambda_function.agent[0]
  to   = aws_lambda_function.this["agent"]
}

moved {
  from = aws_lambda_function.expiry[0]
  to   = aws_lambda_function.this["expiry"]
}

moved {
  from = aws_lambda_function.mcp[0]
  to   = aws_lambda_function.this["mcp"]
}

moved {
  from = aws_iam_role.memory
  to   = aws_iam_role.this["memory"]
}

moved {
  from = aws_iam_role.agent[0]
  to   = aws_iam_role.this["agent"]
}

moved {
  from = aws_iam_role.expiry[0]
  to   = aws_iam_role.this["expiry"]
}

moved {
  from = aws_iam_role.mcp[0]
  to   = aws_iam_role.this["mcp"]
}

moved {
  from = aws_iam_role_policy.memory
  to   = aws_iam_role_policy.this["memory"]
}

moved {
  from = aws_iam_role_policy.agent[0]
  to   = aws_iam_role_policy.this["agent"]
}

moved {
  from = aws_iam_role_policy.expiry[0]
  to   = aws_iam_role_policy.this["expiry"]
}

moved {
  from = aws_iam_role_policy.mcp[0]
  to   = aws_iam_role_policy.this["mcp"]
}

moved {
  from = aws_cloudwatch_log_group.memory
  to   = aws_cloudwatch_log_group.this["memory"]
}

moved {
  from = aws_cloudwatch_log_group.agent[0]
  to   = aws_cloudwatch_log_group.this["agent"]
}

moved {
  from = aws_cloudwatch_log_group.expiry[0]
  to   = aws_cloudwatch_log_group.this["expiry"]
}

moved {
  from = aws_cloudwatch_log_group.mcp[0]
  to   = aws_cloudwatch_log_group.this["mcp"]
}

moved {
  from = aws_cloudwatch_log_group.api[0]
  to   = aws_cloudwatch_log_group.this["api"]
}
