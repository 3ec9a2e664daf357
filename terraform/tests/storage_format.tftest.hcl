# Storage format and store id (store.tf): format 2 by default, and every function is told the
# format explicitly (S3MEMORY_STORAGE_FORMAT, on format 1 too: the functions' own default, "auto",
# could pick format 2 on a new bucket while the KMS grants are format 1's). Format 2 also tells every
# function the store's id, and the key policy and the roles' policies require the store identity
# (s3memory/formats/store_keys.py) in the KMS encryption context, or, when Terraform cannot compute it
# exactly, the context key s3memory:store. Format 1 keeps every KMS condition as it was.
# The identities below are store_identity's (Python) for the same id and prefix; tests/
# test_terraform.py compares the two over more ids. Runs that read policies use `apply`: they name
# the key and role ARNs, which the mocks only give at apply.

mock_provider "aws" {
  source = "./tests/mocks"
}

variables {
  bucket_name     = "s3memory-test-bucket"
  lambda_zip_path = "tests/fixtures/lambda.zip"
  # The agent function exists by default only with an Anthropic API key secret (agent.tftest.hcl);
  # these runs examine it too.
  anthropic_api_key_secret_arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:anthropic-api-key-AbCdEf"

  # Every role that uses the key gets expiry and the operator role too, so that each statement shows.
  expiry_idle_days                = 30
  create_operator_role            = true
  operator_trusted_principal_arns = ["arn:aws:iam::123456789012:role/memory-admin"]

  format_1_condition = { Null = { "kms:EncryptionContext:s3memory:user" = "false" } }
  envelope_sids      = ["EnvelopeKeysWithS3memoryContext", "ExpiryDecryptWithS3memoryContext", "DecryptWithS3memoryContext"]
  store_variables    = ["S3MEMORY_PREFIX", "S3MEMORY_STORAGE_FORMAT", "S3MEMORY_STORE_ID"]
}

run "format_2_by_default_tells_every_function_and_pins_the_identity" {
  command = apply

  assert {
    condition = [
      for fn in [aws_lambda_function.this["memory"], aws_lambda_function.this["agent"], aws_lambda_function.this["expiry"]] : {
        for name, value in fn.environment[0].variables : name => value if contains(var.store_variables, name)
      }
      ] == [for _ in range(3) : {
        S3MEMORY_PREFIX         = "users/"
        S3MEMORY_STORAGE_FORMAT = "2"
        S3MEMORY_STORE_ID       = "s3memory-test-bucket"
    }]
    error_message = "By default (format 2) the memory, agent and expiry functions get S3MEMORY_STORAGE_FORMAT = 2 and S3MEMORY_STORE_ID = the bucket's name (store_id empty)."
  }

  assert {
    condition     = output.store_identity == "9effe05508c5b6192fe271e1421f8f88"
    error_message = "The store identity is store_identity(\"s3memory-test-bucket\", \"users/\") of s3memory/formats/store_keys.py."
  }

  assert {
    condition = [
      for statement in jsondecode(aws_kms_key.memory[0].policy).Statement : statement.Condition
      if contains(var.envelope_sids, statement.Sid)
      ] == [for _ in range(2) : {
        Null         = { "kms:EncryptionContext:s3memory:user" = "false" }
        StringEquals = { "kms:EncryptionContext:s3memory:store" = "9effe05508c5b6192fe271e1421f8f88" }
    }]
    error_message = "On format 2 the key policy's envelope-key statements (key users, expiry role) require s3memory:user and s3memory:store = this store's identity."
  }

  assert {
    condition = alltrue(flatten([
      for policy in [aws_iam_role_policy.this["memory"].policy, aws_iam_role_policy.this["agent"].policy, aws_iam_role_policy.this["expiry"].policy, aws_iam_role_policy.operator[0].policy] : [
        for statement in jsondecode(policy).Statement :
        statement.Condition == {
          Null         = { "kms:EncryptionContext:s3memory:user" = "false" }
          StringEquals = { "kms:EncryptionContext:s3memory:store" = "9effe05508c5b6192fe271e1421f8f88" }
        }
        if contains(var.envelope_sids, statement.Sid)
      ]
    ]))
    error_message = "On format 2 the memory, agent, expiry and operator roles' envelope-key statements require this store's identity too."
  }

  assert {
    condition = length(flatten([
      for policy in [aws_kms_key.memory[0].policy, aws_iam_role_policy.this["memory"].policy, aws_iam_role_policy.this["agent"].policy, aws_iam_role_policy.this["expiry"].policy, aws_iam_role_policy.operator[0].policy] : [
        for statement in jsondecode(policy).Statement : statement.Sid if contains(var.envelope_sids, statement.Sid)
      ]
    ])) == 6
    error_message = "Six envelope-key statements: two in the key policy, one per role policy."
  }

  # The SSE-KMS statements carry S3's context, not s3memory's: format 2 leaves them alone.
  assert {
    condition = alltrue([
      for statement in jsondecode(aws_kms_key.memory[0].policy).Statement :
      !can(statement.Condition.StringEquals["kms:EncryptionContext:s3memory:store"]) &&
      can(statement.Condition.StringLike["kms:EncryptionContext:aws:s3:arn"])
      if contains(["BucketSseViaS3", "ExpiryDecryptViaS3"], statement.Sid)
    ])
    error_message = "The via-S3 statements keep their S3 conditions and no s3memory:store condition."
  }

  assert {
    condition     = output.storage_format == 2 && output.store_id == "s3memory-test-bucket"
    error_message = "Outputs: format 2 and the store id."
  }

  assert {
    condition = length(flatten([
      for policy in [aws_kms_key.memory[0].policy, aws_iam_role_policy.this["memory"].policy, aws_iam_role_policy.this["agent"].policy, aws_iam_role_policy.this["expiry"].policy, aws_iam_role_policy.operator[0].policy] : [
        for statement in jsondecode(policy).Statement : statement.Sid if endswith(statement.Sid, "Format1Migration")
      ]
    ])) == 0
    error_message = "A format-2 store not migrating grants nothing under the format-1 context: a request without s3memory:store is refused."
  }
}

run "format_1_tells_every_function_format_1_and_changes_no_condition" {
  command = apply

  variables {
    storage_format = 1
  }

  assert {
    condition = [
      for fn in [aws_lambda_function.this["memory"], aws_lambda_function.this["agent"], aws_lambda_function.this["expiry"]] : {
        for name, value in fn.environment[0].variables : name => value if contains(var.store_variables, name)
      }
      ] == [for _ in range(3) : {
        S3MEMORY_PREFIX         = "users/"
        S3MEMORY_STORAGE_FORMAT = "1"
    }]
    error_message = "On format 1 the memory, agent and expiry functions get S3MEMORY_STORAGE_FORMAT = 1 explicitly (the functions' own default is auto) and no S3MEMORY_STORE_ID without a store_id."
  }

  assert {
    condition = [
      for statement in jsondecode(aws_kms_key.memory[0].policy).Statement : statement.Condition
      if contains(var.envelope_sids, statement.Sid)
    ] == [var.format_1_condition, var.format_1_condition]
    error_message = "On format 1 the key policy's two envelope-key statements require s3memory:user (Null = false), exactly as before."
  }

  assert {
    condition = [
      for policy in [aws_iam_role_policy.this["memory"].policy, aws_iam_role_policy.this["agent"].policy, aws_iam_role_policy.this["expiry"].policy, aws_iam_role_policy.operator[0].policy] : [
        for statement in jsondecode(policy).Statement : statement.Condition
        if contains(var.envelope_sids, statement.Sid)
      ]
    ] == [for _ in range(4) : [var.format_1_condition]]
    error_message = "On format 1 the four roles' envelope-key statements require s3memory:user (Null = false), exactly as before."
  }

  assert {
    condition     = !strcontains(aws_kms_key.memory[0].policy, "s3memory:store") && alltrue([for policy in [aws_iam_role_policy.this["memory"].policy, aws_iam_role_policy.this["agent"].policy, aws_iam_role_policy.this["expiry"].policy, aws_iam_role_policy.operator[0].policy] : !strcontains(policy, "s3memory:store")])
    error_message = "On format 1 no policy names s3memory:store."
  }

  assert {
    condition     = output.storage_format == 1 && output.store_id == "s3memory-test-bucket" && output.store_identity == null
    error_message = "Outputs: format 1, the store id defaults to the bucket's name, no store identity on format 1."
  }
}

run "store_id_and_prefix_make_the_identity" {
  command = apply

  variables {
    storage_format = 2
    store_id       = "source-bucket"
    memory_prefix  = "tenants/prod/"
  }

  assert {
    condition = alltrue([
      for fn in [aws_lambda_function.this["memory"], aws_lambda_function.this["agent"], aws_lambda_function.this["expiry"]] :
      fn.environment[0].variables["S3MEMORY_STORE_ID"] == "source-bucket" &&
      fn.environment[0].variables["S3MEMORY_PREFIX"] == "tenants/prod/"
    ])
    error_message = "store_id reaches every function as S3MEMORY_STORE_ID (a replica's readers name the source's id)."
  }

  assert {
    condition = output.store_identity == "08aa69700c92d62a224de001351af461" && [
      for statement in jsondecode(aws_kms_key.memory[0].policy).Statement : statement.Condition.StringEquals["kms:EncryptionContext:s3memory:store"]
      if contains(var.envelope_sids, statement.Sid)
    ] == ["08aa69700c92d62a224de001351af461", "08aa69700c92d62a224de001351af461"]
    error_message = "The identity pinned is store_identity(\"source-bucket\", \"tenants/prod/\"), not the bucket's."
  }
}

run "non_ascii_store_id_is_pinned_exactly" {
  command = plan

  variables {
    storage_format = 2
    store_id       = "Магазин · 1"
  }

  assert {
    condition     = output.store_identity == "fa0aa4503a88f2dfc5cf76daeaf1dd3b"
    error_message = "A store id of multi-byte characters shorter than 128 bytes hashes as store_identity does (UTF-8 lengths)."
  }

  assert {
    condition     = aws_lambda_function.this["memory"].environment[0].variables["S3MEMORY_STORE_ID"] == "Магазин · 1"
    error_message = "The store id reaches the function as given."
  }
}

run "store_id_on_format_1_is_passed_but_changes_no_condition" {
  command = apply

  variables {
    storage_format = 1
    store_id       = "source-bucket"
  }

  assert {
    condition = [
      for fn in [aws_lambda_function.this["memory"], aws_lambda_function.this["agent"], aws_lambda_function.this["expiry"]] : {
        for name, value in fn.environment[0].variables : name => value if contains(var.store_variables, name)
      }
      ] == [for _ in range(3) : {
        S3MEMORY_PREFIX         = "users/"
        S3MEMORY_STORAGE_FORMAT = "1"
        S3MEMORY_STORE_ID       = "source-bucket"
    }]
    error_message = "A store_id set on format 1 reaches the functions (unused by format 1), next to S3MEMORY_STORAGE_FORMAT = 1."
  }

  assert {
    condition = [
      for statement in jsondecode(aws_kms_key.memory[0].policy).Statement : statement.Condition
      if contains(var.envelope_sids, statement.Sid)
    ] == [var.format_1_condition, var.format_1_condition]
    error_message = "On format 1 a store_id changes no KMS condition."
  }

  assert {
    condition     = output.store_identity == null && output.store_id == "source-bucket"
    error_message = "No store identity on format 1."
  }
}

# 200 bytes: the length's byte 0xc8 cannot be written in a UTF-8 string, so Terraform cannot hash
# the framing; the policies require the context key only, and the check warns.
run "identity_terraform_cannot_compute_requires_the_store_key_and_warns" {
  command = apply

  variables {
    storage_format = 2
    store_id       = "a-store-id-of-two-hundred-bytes-${join("", [for _ in range(168) : "x"])}"
  }

  expect_failures = [check.store_identity_pinned]

  assert {
    condition = [
      for statement in jsondecode(aws_kms_key.memory[0].policy).Statement : statement.Condition
      if contains(var.envelope_sids, statement.Sid)
      ] == [for _ in range(2) : {
        Null = {
          "kms:EncryptionContext:s3memory:user"  = "false"
          "kms:EncryptionContext:s3memory:store" = "false"
        }
    }]
    error_message = "When the identity cannot be computed, the envelope-key statements require both s3memory:user and s3memory:store to be present."
  }

  assert {
    condition = alltrue(flatten([
      for policy in [aws_iam_role_policy.this["memory"].policy, aws_iam_role_policy.this["agent"].policy, aws_iam_role_policy.this["expiry"].policy, aws_iam_role_policy.operator[0].policy] : [
        for statement in jsondecode(policy).Statement :
        statement.Condition.Null["kms:EncryptionContext:s3memory:store"] == "false" &&
        statement.Condition.Null["kms:EncryptionContext:s3memory:user"] == "false"
        if contains(var.envelope_sids, statement.Sid)
      ]
    ]))
    error_message = "The roles' envelope-key statements require both context keys too."
  }

  assert {
    condition     = output.store_identity == null && length(output.store_id) == 200
    error_message = "No identity output when it cannot be computed."
  }
}

# "e" + U+0301 would compose under Terraform's NFC normalisation when a length byte is a letter:
# a store_id beginning with a combining mark is never pinned.
run "store_id_beginning_with_a_combining_mark_is_not_pinned" {
  command = plan

  variables {
    storage_format = 2
    store_id       = "\u0301${join("", [for _ in range(99) : "x"])}"
  }

  expect_failures = [check.store_identity_pinned]

  assert {
    condition     = output.store_identity == null
    error_message = "A store_id beginning with a combining mark is not hashed by Terraform."
  }
}

run "accepts_the_longest_and_spaced_store_ids" {
  command = plan

  variables {
    storage_format = 2
    store_id       = "${join("", [for _ in range(253) : "é"])} x"
  }

  expect_failures = [check.store_identity_pinned]
}

run "accepts_a_store_id_with_inner_spaces" {
  command = plan

  variables {
    storage_format = 2
    store_id       = "prod store (eu-west-1)"
  }

  assert {
    condition     = output.store_identity != null
    error_message = "A printable store id with inner spaces is accepted and pinned."
  }
}

run "rejects_storage_formats_but_1_and_2" {
  command = plan

  variables {
    storage_format = 3
  }

  expect_failures = [var.storage_format]
}

run "rejects_a_fractional_storage_format" {
  command = plan

  variables {
    storage_format = 1.5
  }

  expect_failures = [var.storage_format]
}

run "rejects_a_store_id_over_255_characters" {
  command = plan

  variables {
    store_id = join("", [for _ in range(256) : "x"])
  }

  expect_failures = [var.store_id]
}

run "rejects_a_control_character_in_store_id" {
  command = plan

  variables {
    store_id = "source\nbucket"
  }

  expect_failures = [var.store_id]
}

run "rejects_a_tab_in_store_id" {
  command = plan

  variables {
    store_id = "source\tbucket"
  }

  expect_failures = [var.store_id]
}

run "rejects_a_format_character_in_store_id" {
  command = plan

  variables {
    store_id = "source\u200bbucket" # zero-width space (Cf)
  }

  expect_failures = [var.store_id]
}

run "rejects_a_separator_but_the_space_in_store_id" {
  command = plan

  variables {
    store_id = "source\u00a0bucket" # no-break space (Zs)
  }

  expect_failures = [var.store_id]
}

run "rejects_a_line_separator_in_store_id" {
  command = plan

  variables {
    store_id = "source\u2028bucket"
  }

  expect_failures = [var.store_id]
}

run "rejects_leading_or_trailing_space_in_store_id" {
  command = plan

  variables {
    store_id = " source-bucket"
  }

  expect_failures = [var.store_id]
}

run "rejects_a_blank_store_id" {
  command = plan

  variables {
    store_id = "   "
  }

  expect_failures = [var.store_id]
}

# Moving a format-1 store: format-1 data keys (s3memory:user, no s3memory:store) may be unwrapped,
# Decrypt only, by every key user and the expiry role; the format-2 grants stay pinned.
run "migrating_from_format_1_adds_format_1_decrypt_only" {
  command = apply

  variables {
    storage_format          = 2
    migrating_from_format_1 = true
  }

  assert {
    condition = {
      for statement in jsondecode(aws_kms_key.memory[0].policy).Statement : statement.Sid => statement
      if endswith(statement.Sid, "Format1Migration")
      } == jsondecode(jsonencode({
        EnvelopeKeysFormat1Migration = {
          Sid    = "EnvelopeKeysFormat1Migration"
          Effect = "Allow"
          Principal = { AWS = [
            "arn:aws:iam::123456789012:role/s3memory-memory-lambda",
            "arn:aws:iam::123456789012:role/s3memory-agent-lambda",
            "arn:aws:iam::123456789012:role/s3memory-operator",
          ] }
          Action   = "kms:Decrypt"
          Resource = "*"
          Condition = { Null = {
            "kms:EncryptionContext:s3memory:user"  = "false"
            "kms:EncryptionContext:s3memory:store" = "true"
          } }
        }
        ExpiryDecryptFormat1Migration = {
          Sid       = "ExpiryDecryptFormat1Migration"
          Effect    = "Allow"
          Principal = { AWS = "arn:aws:iam::123456789012:role/s3memory-expiry-lambda" }
          Action    = "kms:Decrypt"
          Resource  = "*"
          Condition = { Null = {
            "kms:EncryptionContext:s3memory:user"  = "false"
            "kms:EncryptionContext:s3memory:store" = "true"
          } }
        }
    }))
    error_message = "While migrating, the key users and the expiry role may Decrypt (only) with the format-1 context: s3memory:user present, s3memory:store absent."
  }

  assert {
    condition = alltrue([
      for policy in [aws_iam_role_policy.this["memory"].policy, aws_iam_role_policy.this["agent"].policy, aws_iam_role_policy.this["expiry"].policy, aws_iam_role_policy.operator[0].policy] :
      [for statement in jsondecode(policy).Statement : statement if statement.Sid == "DecryptFormat1Migration"] == [{
        Sid      = "DecryptFormat1Migration"
        Effect   = "Allow"
        Action   = "kms:Decrypt"
        Resource = "arn:aws:kms:eu-west-1:123456789012:key/11111111-2222-3333-4444-555555555555"
        Condition = { Null = {
          "kms:EncryptionContext:s3memory:user"  = "false"
          "kms:EncryptionContext:s3memory:store" = "true"
        } }
      }]
    ])
    error_message = "While migrating, each role's policy has one Decrypt-only statement with the format-1 context."
  }

  assert {
    condition = [
      for statement in jsondecode(aws_kms_key.memory[0].policy).Statement : statement.Condition
      if contains(var.envelope_sids, statement.Sid)
      ] == [for _ in range(2) : {
        Null         = { "kms:EncryptionContext:s3memory:user" = "false" }
        StringEquals = { "kms:EncryptionContext:s3memory:store" = "9effe05508c5b6192fe271e1421f8f88" }
    }]
    error_message = "The format-2 grants (GenerateDataKey and Decrypt) stay pinned to the store identity while migrating."
  }
}

run "migrating_has_no_effect_on_format_1" {
  command = apply

  variables {
    storage_format          = 1
    migrating_from_format_1 = true
  }

  assert {
    condition = length(flatten([
      for policy in [aws_kms_key.memory[0].policy, aws_iam_role_policy.this["memory"].policy, aws_iam_role_policy.this["agent"].policy, aws_iam_role_policy.this["expiry"].policy, aws_iam_role_policy.operator[0].policy] : [
        for statement in jsondecode(policy).Statement : statement.Sid if endswith(statement.Sid, "Format1Migration")
      ]
    ])) == 0
    error_message = "On format 1 migrating_from_format_1 adds nothing: the format-1 grants already take that context."
  }
}
