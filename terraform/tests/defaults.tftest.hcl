# Default configuration: bucket hardening, key, functions and least-privilege IAM.
# The AWS provider is mocked, so nothing is created and no credentials are needed.

mock_provider "aws" {
  source = "./tests/mocks"
}

variables {
  bucket_name     = "s3memory-test-bucket"
  lambda_zip_path = "tests/fixtures/lambda.zip"
  # The agent function exists by default only with an Anthropic API key secret (agent.tftest.hcl);
  # these runs examine it too.
  anthropic_api_key_secret_arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:anthropic-api-key-AbCdEf"
}

run "bucket_is_locked_down" {
  command = plan

  assert {
    condition = alltrue([
      aws_s3_bucket_public_access_block.memory[0].block_public_acls,
      aws_s3_bucket_public_access_block.memory[0].block_public_policy,
      aws_s3_bucket_public_access_block.memory[0].ignore_public_acls,
      aws_s3_bucket_public_access_block.memory[0].restrict_public_buckets,
    ])
    error_message = "All four public access block settings must be true."
  }

  assert {
    condition     = aws_s3_bucket_versioning.memory[0].versioning_configuration[0].status == "Enabled"
    error_message = "Bucket versioning must be enabled."
  }

  assert {
    condition     = aws_s3_bucket_ownership_controls.memory[0].rule[0].object_ownership == "BucketOwnerEnforced"
    error_message = "Object ownership must be BucketOwnerEnforced (ACLs disabled)."
  }

  assert {
    condition     = aws_s3_bucket.memory[0].force_destroy == false
    error_message = "force_destroy must default to false."
  }

  assert {
    condition = alltrue([
      for rule in aws_s3_bucket_server_side_encryption_configuration.memory[0].rule :
      rule.bucket_key_enabled && rule.apply_server_side_encryption_by_default[0].sse_algorithm == "aws:kms"
    ]) && length(aws_s3_bucket_server_side_encryption_configuration.memory[0].rule) == 1
    error_message = "Default encryption must be SSE-KMS with bucket keys enabled."
  }

  assert {
    condition     = length(aws_s3_bucket_logging.memory) == 0
    error_message = "Access logging is opt-in."
  }
}

run "bucket_policy_requires_tls" {
  command = plan

  assert {
    condition = length([
      for statement in jsondecode(aws_s3_bucket_policy.memory[0].policy).Statement : statement
      if statement.Effect == "Deny" &&
      statement.Principal == "*" &&
      try(statement.Condition.Bool["aws:SecureTransport"], "") == "false" &&
      contains(flatten([statement.Resource]), "arn:aws:s3:::s3memory-test-bucket") &&
      contains(flatten([statement.Resource]), "arn:aws:s3:::s3memory-test-bucket/*")
    ]) == 1
    error_message = "The bucket policy must deny every request without TLS, on the bucket and its objects."
  }

  assert {
    condition = length([
      for statement in jsondecode(aws_s3_bucket_policy.memory[0].policy).Statement : statement
      if statement.Effect == "Allow"
    ]) == 0
    error_message = "The bucket policy must only deny; access is granted by IAM."
  }
}

run "lifecycle_defaults" {
  command = plan

  assert {
    condition     = [for rule in aws_s3_bucket_lifecycle_configuration.memory[0].rule : rule.id] == ["expire-noncurrent-versions", "abort-incomplete-multipart-uploads"]
    error_message = "By default only the noncurrent-version and multipart rules exist (no object expiration)."
  }

  assert {
    condition     = aws_s3_bucket_lifecycle_configuration.memory[0].rule[0].noncurrent_version_expiration[0].noncurrent_days == 30
    error_message = "Noncurrent versions must expire after var.noncurrent_version_expiration_days (default 30)."
  }

  assert {
    condition     = aws_s3_bucket_lifecycle_configuration.memory[0].rule[1].abort_incomplete_multipart_upload[0].days_after_initiation == 7
    error_message = "Incomplete multipart uploads must be aborted after var.abort_incomplete_multipart_upload_days."
  }
}

run "key_rotation_and_alias" {
  command = plan

  assert {
    condition     = aws_kms_key.memory[0].enable_key_rotation
    error_message = "Automatic key rotation must be enabled."
  }

  assert {
    condition     = aws_kms_key.memory[0].deletion_window_in_days == 30
    error_message = "The deletion window defaults to 30 days."
  }

  assert {
    condition     = aws_kms_alias.memory[0].name == "alias/agent-memory"
    error_message = "The key alias defaults to alias/agent-memory."
  }
}

run "functions" {
  command = plan

  assert {
    condition     = aws_lambda_function.this["memory"].handler == "s3memory.aws_lambda.memory_handler"
    error_message = "Wrong memory handler."
  }

  assert {
    condition     = aws_lambda_function.this["agent"].handler == "s3memory.aws_lambda.agent_handler"
    error_message = "Wrong agent handler."
  }

  assert {
    condition = alltrue([
      for fn in [aws_lambda_function.this["memory"], aws_lambda_function.this["agent"]] :
      fn.runtime == "python3.11" && fn.architectures == tolist(["x86_64"]) &&
      fn.source_code_hash == filebase64sha256("tests/fixtures/lambda.zip")
    ])
    error_message = "Both functions run python3.11 on x86_64 from the zip, with its hash."
  }

  assert {
    condition     = aws_lambda_function.this["memory"].timeout == 30 && aws_lambda_function.this["agent"].timeout == 120
    error_message = "Default timeouts are 30 s (memory) and 120 s (agent)."
  }

  assert {
    condition     = aws_lambda_function.this["memory"].memory_size == 512 && aws_lambda_function.this["agent"].memory_size == 512
    error_message = "Both functions default to 512 MB (docs/deploy.md, \"Memory size\")."
  }

  assert {
    condition = (
      aws_lambda_function.this["memory"].environment[0].variables["S3MEMORY_BUCKET"] == "s3memory-test-bucket" &&
      aws_lambda_function.this["memory"].environment[0].variables["S3MEMORY_PREFIX"] == "users/" &&
      aws_lambda_function.this["agent"].environment[0].variables["S3MEMORY_MODEL"] == "claude-sonnet-4-5" &&
      aws_lambda_function.this["agent"].environment[0].variables["ANTHROPIC_API_KEY_SECRET_ARN"] == "arn:aws:secretsmanager:eu-west-1:123456789012:secret:anthropic-api-key-AbCdEf" &&
      !contains(keys(aws_lambda_function.this["memory"].environment[0].variables), "S3MEMORY_MODEL")
    )
    error_message = "Environment variables are wrong."
  }

  assert {
    condition = (
      aws_cloudwatch_log_group.this["memory"].name == "/aws/lambda/s3memory-memory" &&
      aws_cloudwatch_log_group.this["agent"].name == "/aws/lambda/s3memory-agent" &&
      aws_cloudwatch_log_group.this["memory"].retention_in_days == 30 &&
      aws_cloudwatch_log_group.this["agent"].retention_in_days == 30
    )
    error_message = "Each function gets its own /aws/lambda/<name> log group with 30-day retention."
  }
}

run "api_absent_by_default" {
  command = plan

  assert {
    condition = (
      length(aws_apigatewayv2_api.this) == 0 &&
      length(aws_apigatewayv2_route.memory) == 0 &&
      length(aws_apigatewayv2_authorizer.jwt) == 0 &&
      length(aws_lambda_permission.api_memory) == 0 &&
      !contains(keys(aws_cloudwatch_log_group.this), "api")
    )
    error_message = "No API resources may exist unless create_http_api is true."
  }

  assert {
    condition     = output.api_endpoint == null && output.api_id == null
    error_message = "api_endpoint and api_id are null when the API is disabled."
  }
}

# Policies mention the key ARN, which a mocked provider only invents at apply time.
run "least_privilege_iam" {
  command = apply

  assert {
    condition = alltrue([
      for policy in [aws_iam_role_policy.this["memory"].policy, aws_iam_role_policy.this["agent"].policy] :
      !strcontains(policy, "\"s3:*\"") && !strcontains(policy, "\"kms:*\"") && !strcontains(policy, "\"*\"")
    ])
    error_message = "No role policy may grant s3:*, kms:* or a wildcard action/resource (X-Ray is off by default)."
  }

  assert {
    condition = alltrue([
      for policy in [aws_iam_role_policy.this["memory"].policy, aws_iam_role_policy.this["agent"].policy] :
      toset(flatten([
        for statement in jsondecode(policy).Statement : [
          for action in flatten([statement.Action]) : action if startswith(action, "s3:")
        ]
      ])) == toset(["s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:ListBucket"])
    ])
    error_message = "Each role gets exactly s3:GetObject, s3:PutObject, s3:DeleteObject and s3:ListBucket (no tagging: s3memory sets no tags)."
  }

  assert {
    condition = alltrue([
      for policy in [aws_iam_role_policy.this["memory"].policy, aws_iam_role_policy.this["agent"].policy] :
      alltrue([for statement in jsondecode(policy).Statement : statement.Effect == "Allow" && !can(statement.NotAction) && !can(statement.NotResource)])
    ])
    error_message = "Role policies use plain Allow/Action/Resource statements (no NotAction/NotResource)."
  }

  assert {
    condition = alltrue(flatten([
      for policy in [aws_iam_role_policy.this["memory"].policy, aws_iam_role_policy.this["agent"].policy] : [
        for statement in jsondecode(policy).Statement : statement.Resource == "arn:aws:s3:::s3memory-test-bucket/users/*"
        if startswith(flatten([statement.Action])[0], "s3:") && statement.Action != "s3:ListBucket"
      ]
    ]))
    error_message = "Object permissions must be limited to arn:aws:s3:::BUCKET/users/*."
  }

  assert {
    condition = alltrue([
      for policy in [aws_iam_role_policy.this["memory"].policy, aws_iam_role_policy.this["agent"].policy] :
      length([
        for statement in jsondecode(policy).Statement : statement
        if statement.Action == "s3:ListBucket" &&
        statement.Resource == "arn:aws:s3:::s3memory-test-bucket" &&
        try(statement.Condition.StringLike["s3:prefix"], null) == "users/*"
      ]) == 1
    ])
    error_message = "s3:ListBucket must be on the bucket, conditioned on s3:prefix users/*."
  }

  assert {
    condition = alltrue([
      for policy in [aws_iam_role_policy.this["memory"].policy, aws_iam_role_policy.this["agent"].policy] :
      length([
        for statement in jsondecode(policy).Statement : statement
        if statement.Sid == "EnvelopeKeysWithS3memoryContext" &&
        statement.Resource == aws_kms_key.memory[0].arn &&
        toset(flatten([statement.Action])) == toset(["kms:GenerateDataKey", "kms:Decrypt"]) &&
        try(statement.Condition.Null["kms:EncryptionContext:s3memory:user"], null) == "false"
      ]) == 1
    ])
    error_message = "KMS data-key use must be on this key only and require the s3memory:user encryption context."
  }

  assert {
    condition = alltrue([
      for policy in [aws_iam_role_policy.this["memory"].policy, aws_iam_role_policy.this["agent"].policy] :
      length([
        for statement in jsondecode(policy).Statement : statement
        if statement.Sid == "BucketSseViaS3" &&
        statement.Resource == aws_kms_key.memory[0].arn &&
        try(statement.Condition.StringEquals["kms:ViaService"], null) == "s3.eu-west-1.amazonaws.com"
      ]) == 1
    ])
    error_message = "SSE-KMS use must be restricted to kms:ViaService s3.<region>.amazonaws.com."
  }

  assert {
    condition = alltrue(flatten([
      for policy in [aws_iam_role_policy.this["memory"].policy, aws_iam_role_policy.this["agent"].policy] : [
        for statement in jsondecode(policy).Statement : statement.Resource == "${aws_kms_key.memory[0].arn}"
        if startswith(flatten([statement.Action])[0], "kms:")
      ]
    ]))
    error_message = "KMS permissions must only name the module's key."
  }

  assert {
    condition = (
      [for s in jsondecode(aws_iam_role_policy.this["memory"].policy).Statement : s.Resource if s.Sid == "OwnLogGroup"] == ["arn:aws:logs:eu-west-1:123456789012:log-group:/aws/lambda/s3memory-memory:*"] &&
      [for s in jsondecode(aws_iam_role_policy.this["agent"].policy).Statement : s.Resource if s.Sid == "OwnLogGroup"] == ["arn:aws:logs:eu-west-1:123456789012:log-group:/aws/lambda/s3memory-agent:*"]
    )
    error_message = "Each role may only write to its own log group."
  }

  assert {
    condition = alltrue([
      for policy in [aws_iam_role_policy.this["memory"].policy, aws_iam_role_policy.this["agent"].policy] :
      !strcontains(policy, "logs:CreateLogGroup")
    ]) && !strcontains(aws_iam_role_policy.this["memory"].policy, "secretsmanager")
    error_message = "Only the agent role may read the secret; no role may create log groups."
  }

  assert {
    condition     = jsondecode(aws_iam_role.this["memory"].assume_role_policy).Statement[0].Principal.Service == "lambda.amazonaws.com"
    error_message = "Only Lambda may assume the execution roles."
  }

  assert {
    condition     = aws_lambda_function.this["memory"].environment[0].variables["S3MEMORY_KMS_KEY_ID"] == aws_kms_key.memory[0].arn
    error_message = "S3MEMORY_KMS_KEY_ID must be the key ARN."
  }
}

run "key_policy" {
  command = apply

  assert {
    condition = alltrue([
      for statement in jsondecode(aws_kms_key.memory[0].policy).Statement :
      !contains(flatten([statement.Action]), "kms:*") && !contains(flatten([statement.Action]), "kms:Decrypt") && !contains(flatten([statement.Action]), "kms:GenerateDataKey")
      if contains(["ReadOnlyByAccount", "KeyAdministration", "KeyPolicyChangeBreakGlass"], statement.Sid)
    ])
    error_message = "The account root and the key administrators may not decrypt (key_policy.tftest.hcl checks the policy in full)."
  }

  assert {
    condition = length([
      for statement in jsondecode(aws_kms_key.memory[0].policy).Statement : statement
      if statement.Sid == "EnvelopeKeysWithS3memoryContext" &&
      try(toset(statement.Principal.AWS), null) == toset([aws_iam_role.this["memory"].arn, aws_iam_role.this["agent"].arn]) &&
      try(statement.Condition.Null["kms:EncryptionContext:s3memory:user"], null) == "false"
    ]) == 1
    error_message = "The key policy must let the two roles use the key only with the s3memory encryption context."
  }

  assert {
    condition = alltrue([
      for statement in jsondecode(aws_kms_key.memory[0].policy).Statement :
      try(statement.Principal.AWS != "*", true) && try(statement.Principal != "*", true)
    ])
    error_message = "The key policy must not have a wildcard principal."
  }

  assert {
    condition     = aws_cloudwatch_log_group.this["memory"].kms_key_id == aws_kms_key.memory[0].arn
    error_message = "Log groups are encrypted with the module key by default."
  }
}
