# Resources that became optional keep their state: without these, an upgrade from a version where
# they were single resources would plan to destroy each one and create it again at index 0.

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
