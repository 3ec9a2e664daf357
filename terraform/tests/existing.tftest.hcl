# Bring your own bucket and key: create_bucket = false (bucket_name then names an existing bucket)
# and create_kms_key = false with kms_key_arn, each alone and both
# together (with and without the agent function). With either, the module creates no resource of it
# and manages none of its settings or policies; the roles get the same IAM grants on it, the store id
# defaults to the existing bucket's name (and the store identity follows), and the outputs give the
# statements the operator adds: required_key_policy_statements and bucket_policy_statements.
# Runs use `apply` where an assertion needs the roles' ARNs, which the mocks only give at apply.

mock_provider "aws" {
  source = "./tests/mocks"
}

variables {
  lambda_zip_path = "tests/fixtures/lambda.zip"
}

run "existing_bucket_with_the_module_key" {
  command = apply

  variables {
    bucket_name   = "team-agent-memory"
    create_bucket = false
  }

  assert {
    condition = (
      length(aws_s3_bucket.memory) == 0 &&
      length(aws_s3_bucket_ownership_controls.memory) == 0 &&
      length(aws_s3_bucket_public_access_block.memory) == 0 &&
      length(aws_s3_bucket_versioning.memory) == 0 &&
      length(aws_s3_bucket_server_side_encryption_configuration.memory) == 0 &&
      length(aws_s3_bucket_lifecycle_configuration.memory) == 0 &&
      length(aws_s3_bucket_logging.memory) == 0 &&
      length(aws_s3_bucket_policy.memory) == 0
    )
    error_message = "With create_bucket = false the module creates no bucket resource (and sets no policy, versioning, encryption or lifecycle on it)."
  }

  assert {
    condition     = length(aws_kms_key.memory) == 1 && length(aws_kms_alias.memory) == 1
    error_message = "The key is still the module's."
  }

  assert {
    condition = (
      aws_lambda_function.this["memory"].environment[0].variables["S3MEMORY_BUCKET"] == "team-agent-memory" &&
      aws_lambda_function.this["memory"].environment[0].variables["S3MEMORY_STORE_ID"] == "team-agent-memory" &&
      output.bucket_name == "team-agent-memory" &&
      output.bucket_arn == "arn:aws:s3:::team-agent-memory" &&
      output.store_id == "team-agent-memory"
    )
    error_message = "The functions and outputs name the existing bucket; the store id defaults to its name."
  }

  assert {
    condition = (
      [for s in jsondecode(aws_iam_role_policy.this["memory"].policy).Statement : s.Resource if s.Sid == "MemoryObjects"] == ["arn:aws:s3:::team-agent-memory/users/*"] &&
      [for s in jsondecode(aws_iam_role_policy.this["memory"].policy).Statement : s.Resource if s.Sid == "ListMemoryPrefix"] == ["arn:aws:s3:::team-agent-memory"] &&
      [for s in jsondecode(aws_iam_role_policy.this["memory"].policy).Statement : s.Condition.StringLike["kms:EncryptionContext:aws:s3:arn"] if s.Sid == "BucketSseViaS3"] == [["arn:aws:s3:::team-agent-memory", "arn:aws:s3:::team-agent-memory/users/*"]]
    )
    error_message = "The role's grants are the usual ones, on the existing bucket."
  }

  # The identity of store id "team-agent-memory" at "users/" (s3memory.formats.store_keys.store_identity).
  assert {
    condition = (
      output.store_identity == "e41b63df50779d03290e8e977b4d3d98" &&
      [for s in jsondecode(aws_kms_key.memory[0].policy).Statement : s.Condition.StringEquals["kms:EncryptionContext:s3memory:store"] if s.Sid == "EnvelopeKeysWithS3memoryContext"] == [output.store_identity]
    )
    error_message = "The key policy pins the existing bucket's store identity."
  }

  assert {
    condition = alltrue([
      for statement in jsondecode(output.bucket_policy_statements) :
      statement.Effect == "Deny" && contains(flatten([statement.Resource]), "arn:aws:s3:::team-agent-memory/*")
    ]) && length(jsondecode(output.bucket_policy_statements)) == 4
    error_message = "bucket_policy_statements: the four Deny statements, for the existing bucket."
  }
}

run "module_bucket_with_an_existing_key" {
  command = apply

  variables {
    bucket_name    = "s3memory-test-bucket"
    create_kms_key = false
    kms_key_arn    = "arn:aws:kms:eu-west-1:123456789012:key/aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"
  }

  assert {
    condition     = length(aws_kms_key.memory) == 0 && length(aws_kms_alias.memory) == 0 && length(data.aws_iam_session_context.current) == 0
    error_message = "With create_kms_key = false the module creates no key and no alias (and does not look up a key administrator)."
  }

  assert {
    condition = (
      length(aws_s3_bucket.memory) == 1 &&
      [for rule in aws_s3_bucket_server_side_encryption_configuration.memory[0].rule : rule.apply_server_side_encryption_by_default[0].kms_master_key_id] == ["arn:aws:kms:eu-west-1:123456789012:key/aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"]
    )
    error_message = "The module's bucket encrypts by default with the existing key."
  }

  assert {
    condition = (
      aws_lambda_function.this["memory"].environment[0].variables["S3MEMORY_KMS_KEY_ID"] == "arn:aws:kms:eu-west-1:123456789012:key/aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee" &&
      aws_cloudwatch_log_group.this["memory"].kms_key_id == "arn:aws:kms:eu-west-1:123456789012:key/aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee" &&
      output.kms_key_arn == "arn:aws:kms:eu-west-1:123456789012:key/aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee" &&
      output.kms_key_id == "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee" &&
      output.kms_key_alias == null
    )
    error_message = "The functions, the log groups and the outputs use the existing key; there is no alias."
  }

  # The roles' IAM policies grant the existing key under the usual conditions, the store binding
  # (s3memory:store = the identity) included.
  assert {
    condition = [
      for statement in jsondecode(aws_iam_role_policy.this["memory"].policy).Statement : [statement.Resource, statement.Condition]
      if statement.Sid == "EnvelopeKeysWithS3memoryContext"
      ] == [["arn:aws:kms:eu-west-1:123456789012:key/aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee", {
        Null         = { "kms:EncryptionContext:s3memory:user" = "false" }
        StringEquals = { "kms:EncryptionContext:s3memory:store" = "9effe05508c5b6192fe271e1421f8f88" }
    }]]
    error_message = "The envelope-key grant names the existing key and keeps the store-id binding."
  }

  # What the operator adds to the key's policy: the key users' statements, no administration.
  assert {
    condition = [for statement in jsondecode(output.required_key_policy_statements) : statement.Sid] == [
      "EnvelopeKeysWithS3memoryContext", "BucketSseViaS3", "CloudWatchLogsForModuleLogGroups",
    ]
    error_message = "required_key_policy_statements: the envelope keys, SSE via S3 and CloudWatch Logs statements."
  }

  assert {
    condition = [
      for statement in jsondecode(output.required_key_policy_statements) : [statement.Principal, statement.Condition]
      if statement.Sid == "EnvelopeKeysWithS3memoryContext"
      ] == [[{ AWS   = ["arn:aws:iam::123456789012:role/s3memory-memory-lambda"] }, {
        Null         = { "kms:EncryptionContext:s3memory:user" = "false" }
        StringEquals = { "kms:EncryptionContext:s3memory:store" = "9effe05508c5b6192fe271e1421f8f88" }
    }]]
    error_message = "The statement to add names the memory role (no agent without a secret) with the store-id binding."
  }
}

run "both_existing_without_the_agent_function" {
  command = apply

  variables {
    bucket_name           = "team-agent-memory"
    create_bucket         = false
    create_kms_key        = false
    kms_key_arn           = "arn:aws:kms:eu-west-1:123456789012:key/aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"
    create_agent_function = false
    expiry_idle_days      = 30
  }

  assert {
    condition = (
      length(aws_s3_bucket.memory) == 0 && length(aws_s3_bucket_policy.memory) == 0 &&
      length(aws_kms_key.memory) == 0 && length(aws_kms_alias.memory) == 0 &&
      !contains(keys(aws_lambda_function.this), "agent") && !contains(keys(aws_iam_role.this), "agent")
    )
    error_message = "Neither bucket nor key nor agent function is created."
  }

  assert {
    condition = (
      aws_lambda_function.this["memory"].environment[0].variables["S3MEMORY_BUCKET"] == "team-agent-memory" &&
      aws_lambda_function.this["memory"].environment[0].variables["S3MEMORY_KMS_KEY_ID"] == "arn:aws:kms:eu-west-1:123456789012:key/aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee" &&
      aws_lambda_function.this["expiry"].environment[0].variables["S3MEMORY_BUCKET"] == "team-agent-memory"
    )
    error_message = "The memory and expiry functions use the existing bucket and key."
  }

  assert {
    condition = (
      [for s in jsondecode(aws_iam_role_policy.this["expiry"].policy).Statement : s.Resource if s.Sid == "DecryptWithS3memoryContext"] == ["arn:aws:kms:eu-west-1:123456789012:key/aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"] &&
      [for s in jsondecode(aws_iam_role_policy.this["expiry"].policy).Statement : s.Resource if s.Sid == "ReadAndDeleteMemoryObjects"] == ["arn:aws:s3:::team-agent-memory/users/*"]
    )
    error_message = "The expiry role is granted the existing key and bucket."
  }

  assert {
    condition = [for statement in jsondecode(output.required_key_policy_statements) : statement.Sid] == [
      "EnvelopeKeysWithS3memoryContext", "BucketSseViaS3", "ExpiryDecryptWithS3memoryContext",
      "ExpiryDecryptViaS3", "CloudWatchLogsForModuleLogGroups",
    ]
    error_message = "With idle expiry the statements to add include the expiry role's Decrypt-only ones."
  }

  assert {
    condition = [
      for statement in jsondecode(output.required_key_policy_statements) : statement.Condition.ArnEquals["kms:EncryptionContext:aws:logs:arn"]
      if statement.Sid == "CloudWatchLogsForModuleLogGroups"
      ] == [[
        "arn:aws:logs:eu-west-1:123456789012:log-group:/aws/lambda/s3memory-memory",
        "arn:aws:logs:eu-west-1:123456789012:log-group:/aws/lambda/s3memory-expiry",
    ]]
    error_message = "CloudWatch Logs may use the key for exactly the module's log groups (no agent's)."
  }

  assert {
    condition = (
      output.agent_function_arn == null && output.kms_key_alias == null &&
      output.bucket_name == "team-agent-memory"
    )
    error_message = "Outputs: no agent, no alias, the existing bucket."
  }
}

run "refuses_no_key" {
  command = plan

  variables {
    bucket_name    = "s3memory-test-bucket"
    create_kms_key = false
  }

  expect_failures = [aws_lambda_function.this["memory"]]
}

run "refuses_a_key_arn_beside_the_module_key" {
  command = plan

  variables {
    bucket_name = "s3memory-test-bucket"
    kms_key_arn = "arn:aws:kms:eu-west-1:123456789012:key/aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"
  }

  expect_failures = [aws_lambda_function.this["memory"]]
}

run "refuses_bad_existing_names" {
  command = plan

  variables {
    bucket_name    = "Team.Memory"
    create_bucket  = false
    create_kms_key = false
    kms_key_arn    = "arn:aws:kms:eu-west-1:123456789012:alias/agent-memory"
  }

  expect_failures = [var.bucket_name, var.kms_key_arn]
}
