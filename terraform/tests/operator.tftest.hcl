# The optional operator role (create_operator_role): absent by default; when created, assumed only by
# operator_trusted_principal_arns (with MFA by default), with exactly the operator's S3 and KMS
# permissions, and a key user in the key policy. The serving roles' policies stay exactly as they
# are either way. Runs that read policies use `apply`: they name the key ARN, which the mocks only
# give at apply.

mock_provider "aws" {
  source = "./tests/mocks"
}

variables {
  bucket_name     = "s3memory-test-bucket"
  lambda_zip_path = "tests/fixtures/lambda.zip"
  # The agent function exists by default only with an Anthropic API key secret (agent.tftest.hcl);
  # these runs examine it too.
  anthropic_api_key_secret_arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:anthropic-api-key-AbCdEf"

  # The serving roles' policies, in full, as they are without and with the operator role.
  expected_memory_role_policy = {
    Version = "2012-10-17"
    Statement = [
      {
        Sid      = "MemoryObjects"
        Effect   = "Allow"
        Action   = ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"]
        Resource = "arn:aws:s3:::s3memory-test-bucket/users/*"
      },
      {
        Sid       = "ListMemoryPrefix"
        Effect    = "Allow"
        Action    = "s3:ListBucket"
        Resource  = "arn:aws:s3:::s3memory-test-bucket"
        Condition = { StringLike = { "s3:prefix" = "users/*" } }
      },
      {
        Sid      = "EnvelopeKeysWithS3memoryContext"
        Effect   = "Allow"
        Action   = ["kms:GenerateDataKey", "kms:Decrypt"]
        Resource = "arn:aws:kms:eu-west-1:123456789012:key/11111111-2222-3333-4444-555555555555"
        # Storage format 2 (the default): the store identity of s3memory-test-bucket at users/.
        Condition = {
          Null         = { "kms:EncryptionContext:s3memory:user" = "false" }
          StringEquals = { "kms:EncryptionContext:s3memory:store" = "9effe05508c5b6192fe271e1421f8f88" }
        }
      },
      {
        Sid      = "BucketSseViaS3"
        Effect   = "Allow"
        Action   = ["kms:GenerateDataKey", "kms:Decrypt"]
        Resource = "arn:aws:kms:eu-west-1:123456789012:key/11111111-2222-3333-4444-555555555555"
        Condition = {
          StringEquals = { "kms:ViaService" = "s3.eu-west-1.amazonaws.com" }
          StringLike   = { "kms:EncryptionContext:aws:s3:arn" = ["arn:aws:s3:::s3memory-test-bucket", "arn:aws:s3:::s3memory-test-bucket/users/*"] }
        }
      },
      {
        Sid      = "OwnLogGroup"
        Effect   = "Allow"
        Action   = ["logs:CreateLogStream", "logs:PutLogEvents"]
        Resource = "arn:aws:logs:eu-west-1:123456789012:log-group:/aws/lambda/s3memory-memory:*"
      },
    ]
  }
}

run "absent_by_default" {
  command = apply

  assert {
    condition     = length(aws_iam_role.operator) == 0 && length(aws_iam_role_policy.operator) == 0
    error_message = "No operator role (nor its policy) unless create_operator_role = true."
  }

  assert {
    condition     = output.operator_role_arn == null
    error_message = "operator_role_arn is null when no operator role is created."
  }

  assert {
    condition = alltrue([
      for statement in jsondecode(aws_kms_key.memory[0].policy).Statement :
      toset(flatten([statement.Principal.AWS])) == toset([aws_iam_role.this["memory"].arn, aws_iam_role.this["agent"].arn])
      if contains(["EnvelopeKeysWithS3memoryContext", "BucketSseViaS3"], statement.Sid)
    ])
    error_message = "Without the operator role, the key users are the two Lambda roles only."
  }

  assert {
    condition     = jsondecode(aws_iam_role_policy.this["memory"].policy) == jsondecode(jsonencode(var.expected_memory_role_policy))
    error_message = "The memory role's policy is exactly the serving policy."
  }

  assert {
    condition     = !strcontains(aws_iam_role_policy.this["memory"].policy, "operator") && !strcontains(aws_kms_key.memory[0].policy, "operator")
    error_message = "Nothing names an operator role that does not exist."
  }
}

run "created_for_the_trusted_principals" {
  command = apply

  variables {
    create_operator_role = true
    operator_trusted_principal_arns = [
      "arn:aws:iam::123456789012:role/ops/memory-admin",
      "arn:aws:iam::123456789012:user/alice",
    ]
  }

  assert {
    condition = (
      aws_iam_role.operator[0].name == "s3memory-operator" &&
      aws_iam_role.operator[0].path == "/" &&
      aws_iam_role.operator[0].permissions_boundary == null &&
      aws_iam_role.operator[0].max_session_duration == 3600 &&
      aws_iam_role.operator[0].tags["s3memory:module"] == "s3memory"
    )
    error_message = "The operator role is <name_prefix>-operator, with the roles' path, boundary and tags, and one-hour sessions by default."
  }

  assert {
    condition     = output.operator_role_arn == "arn:aws:iam::123456789012:role/s3memory-operator" && output.operator_role_arn == aws_iam_role.operator[0].arn
    error_message = "operator_role_arn is the operator role's ARN."
  }

  # Trust: exactly the listed principals, sts:AssumeRole only, with MFA.
  assert {
    condition     = length(jsondecode(aws_iam_role.operator[0].assume_role_policy).Statement) == 1
    error_message = "The operator role's trust policy has a single statement."
  }

  assert {
    condition = jsondecode(aws_iam_role.operator[0].assume_role_policy).Statement[0] == jsondecode(jsonencode({
      Sid    = "TrustedOperators"
      Effect = "Allow"
      Principal = { AWS = [
        "arn:aws:iam::123456789012:role/ops/memory-admin",
        "arn:aws:iam::123456789012:user/alice",
      ] }
      Action    = "sts:AssumeRole"
      Condition = { Bool = { "aws:MultiFactorAuthPresent" = "true" } }
    }))
    error_message = "Only the trusted principals may assume the operator role (sts:AssumeRole), and by default only with MFA."
  }

  # Permissions: exactly these actions on exactly these resources, under these conditions.
  assert {
    condition = {
      for statement in jsondecode(aws_iam_role_policy.operator[0].policy).Statement :
      statement.Sid => toset(flatten([statement.Action]))
      } == {
      ListMemoryPrefixAndVersions = toset(["s3:ListBucket", "s3:ListBucketVersions"])
      BucketVersioningStatus      = toset(["s3:GetBucketVersioning"])
      MemoryObjectsAndVersions = toset([
        "s3:GetObject",
        "s3:GetObjectVersion",
        "s3:PutObject",
        "s3:DeleteObject",
        "s3:DeleteObjectVersion",
      ])
      EnvelopeKeysWithS3memoryContext = toset(["kms:GenerateDataKey", "kms:Decrypt"])
      BucketSseViaS3                  = toset(["kms:GenerateDataKey", "kms:Decrypt"])
    }
    error_message = "The operator policy has exactly five statements with exactly the listed actions."
  }

  assert {
    condition = {
      for statement in jsondecode(aws_iam_role_policy.operator[0].policy).Statement : statement.Sid => statement.Resource
      } == {
      ListMemoryPrefixAndVersions     = "arn:aws:s3:::s3memory-test-bucket"
      BucketVersioningStatus          = "arn:aws:s3:::s3memory-test-bucket"
      MemoryObjectsAndVersions        = "arn:aws:s3:::s3memory-test-bucket/users/*"
      EnvelopeKeysWithS3memoryContext = aws_kms_key.memory[0].arn
      BucketSseViaS3                  = aws_kms_key.memory[0].arn
    }
    error_message = "Listing and the versioning status on the bucket, objects under the prefix only, KMS on the module's key only."
  }

  assert {
    condition = {
      for statement in jsondecode(aws_iam_role_policy.operator[0].policy).Statement : statement.Sid => try(statement.Condition, null)
      } == jsondecode(jsonencode({
        ListMemoryPrefixAndVersions = { StringLike = { "s3:prefix" = ["users/", "users/*"] } }
        BucketVersioningStatus      = null
        MemoryObjectsAndVersions    = null
        EnvelopeKeysWithS3memoryContext = {
          Null         = { "kms:EncryptionContext:s3memory:user" = "false" }
          StringEquals = { "kms:EncryptionContext:s3memory:store" = "9effe05508c5b6192fe271e1421f8f88" }
        }
        BucketSseViaS3 = {
          StringEquals = { "kms:ViaService" = "s3.eu-west-1.amazonaws.com" }
          StringLike   = { "kms:EncryptionContext:aws:s3:arn" = ["arn:aws:s3:::s3memory-test-bucket", "arn:aws:s3:::s3memory-test-bucket/users/*"] }
        }
    }))
    error_message = "Listing only under the prefix (s3:prefix <prefix> or <prefix>*); KMS with the s3memory encryption context, or via S3 for this bucket, as the serving roles."
  }

  assert {
    condition = alltrue([
      for statement in jsondecode(aws_iam_role_policy.operator[0].policy).Statement :
      statement.Effect == "Allow" && !can(statement.NotAction) && !can(statement.NotResource) &&
      alltrue([for action in flatten([statement.Action]) : !strcontains(action, "*")]) &&
      statement.Resource != "*"
    ])
    error_message = "Plain Allow statements, no wildcard action and no \"*\" resource."
  }

  assert {
    condition     = aws_iam_role_policy.operator[0].role == aws_iam_role.operator[0].id
    error_message = "The operator policy is the operator role's inline policy."
  }

  # The serving roles are unchanged.
  assert {
    condition     = jsondecode(aws_iam_role_policy.this["memory"].policy) == jsondecode(jsonencode(var.expected_memory_role_policy))
    error_message = "The memory role's policy is exactly the serving policy, with or without the operator role."
  }

  assert {
    condition = alltrue(flatten([
      for policy in [aws_iam_role_policy.this["memory"].policy, aws_iam_role_policy.this["agent"].policy] : [
        for action in ["s3:ListBucketVersions", "s3:GetObjectVersion", "s3:DeleteObjectVersion", "s3:GetBucketVersioning"] :
        !strcontains(policy, action)
      ]
    ]))
    error_message = "The serving roles get no version permissions (ListBucketVersions, GetObjectVersion, DeleteObjectVersion, GetBucketVersioning)."
  }

  assert {
    condition = toset(flatten([
      for statement in jsondecode(aws_iam_role_policy.this["agent"].policy).Statement : flatten([statement.Action])
      ])) == toset([
      "s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:ListBucket",
      "kms:GenerateDataKey", "kms:Decrypt", "logs:CreateLogStream", "logs:PutLogEvents",
      "secretsmanager:GetSecretValue",
    ])
    error_message = "The agent role's actions are the serving ones (and its API key secret's)."
  }

  # The key policy: the operator role is a key user, under the same conditions as the Lambda roles.
  assert {
    condition = alltrue([
      for statement in jsondecode(aws_kms_key.memory[0].policy).Statement :
      toset(flatten([statement.Principal.AWS])) == toset([aws_iam_role.this["memory"].arn, aws_iam_role.this["agent"].arn, aws_iam_role.operator[0].arn])
      if contains(["EnvelopeKeysWithS3memoryContext", "BucketSseViaS3"], statement.Sid)
    ]) && length([for statement in jsondecode(aws_kms_key.memory[0].policy).Statement : statement if contains(["EnvelopeKeysWithS3memoryContext", "BucketSseViaS3"], statement.Sid)]) == 2
    error_message = "The key policy's use statements name the operator role next to the two Lambda roles."
  }

  assert {
    condition = [
      for statement in jsondecode(aws_kms_key.memory[0].policy).Statement : statement.Sid
      if contains(flatten([try(statement.Principal.AWS, [])]), aws_iam_role.operator[0].arn)
    ] == ["EnvelopeKeysWithS3memoryContext", "BucketSseViaS3"]
    error_message = "The operator role appears in the key policy only as a key user (no administration, no PutKeyPolicy)."
  }

  assert {
    condition = alltrue([
      for statement in jsondecode(aws_kms_key.memory[0].policy).Statement :
      !contains(flatten([try(statement.Principal.AWS, [])]), "arn:aws:iam::123456789012:user/alice")
    ])
    error_message = "Trusting a principal with the operator role does not make it a key user itself."
  }
}

run "options_follow_their_variables" {
  command = apply

  variables {
    name_prefix                        = "acme-memory"
    memory_prefix                      = "tenants/prod/"
    iam_role_path                      = "/service/s3memory/"
    iam_permissions_boundary_arn       = "arn:aws:iam::123456789012:policy/boundary"
    create_operator_role               = true
    operator_trusted_principal_arns    = ["arn:aws:iam::123456789012:role/ops/memory-admin"]
    operator_require_mfa               = false
    operator_role_max_session_duration = 43200
    additional_key_user_arns           = ["arn:aws:iam::123456789012:role/reporting"]
  }

  assert {
    condition = (
      aws_iam_role.operator[0].name == "acme-memory-operator" &&
      aws_iam_role.operator[0].path == "/service/s3memory/" &&
      aws_iam_role.operator[0].permissions_boundary == "arn:aws:iam::123456789012:policy/boundary" &&
      aws_iam_role.operator[0].max_session_duration == 43200
    )
    error_message = "Name, path, boundary and session duration follow their variables."
  }

  assert {
    condition = jsondecode(aws_iam_role.operator[0].assume_role_policy).Statement == jsondecode(jsonencode([{
      Sid       = "TrustedOperators"
      Effect    = "Allow"
      Principal = { AWS = ["arn:aws:iam::123456789012:role/ops/memory-admin"] }
      Action    = "sts:AssumeRole"
    }]))
    error_message = "operator_require_mfa = false drops the MFA condition and nothing else."
  }

  assert {
    condition = [
      for statement in jsondecode(aws_iam_role_policy.operator[0].policy).Statement : [statement.Resource, try(statement.Condition.StringLike["s3:prefix"], null)]
      if startswith(statement.Sid, "ListMemory") || startswith(statement.Sid, "MemoryObjects")
      ] == [
      ["arn:aws:s3:::s3memory-test-bucket", ["tenants/prod/", "tenants/prod/*"]],
      ["arn:aws:s3:::s3memory-test-bucket/tenants/prod/*", null],
    ]
    error_message = "memory_prefix scopes the operator's listing and objects."
  }

  assert {
    condition = alltrue([
      for statement in jsondecode(aws_kms_key.memory[0].policy).Statement :
      flatten([statement.Principal.AWS]) == [aws_iam_role.this["memory"].arn, aws_iam_role.this["agent"].arn, aws_iam_role.operator[0].arn, "arn:aws:iam::123456789012:role/reporting"]
      if contains(["EnvelopeKeysWithS3memoryContext", "BucketSseViaS3"], statement.Sid)
    ])
    error_message = "The operator role is a key user next to additional_key_user_arns."
  }
}

run "principals_are_ignored_without_the_role" {
  command = plan

  variables {
    operator_trusted_principal_arns = ["arn:aws:iam::123456789012:role/ops/memory-admin"]
  }

  assert {
    condition     = length(aws_iam_role.operator) == 0 && length(aws_iam_role_policy.operator) == 0
    error_message = "Trusted principals alone create nothing."
  }
}

run "refuses_the_role_without_principals" {
  command = plan

  variables {
    create_operator_role = true
  }

  expect_failures = [aws_iam_role.operator]
}

run "refuses_a_wildcard_principal" {
  command = plan

  variables {
    create_operator_role            = true
    operator_trusted_principal_arns = ["arn:aws:iam::123456789012:role/*"]
  }

  expect_failures = [var.operator_trusted_principal_arns]
}

run "refuses_the_account_root" {
  command = plan

  variables {
    create_operator_role            = true
    operator_trusted_principal_arns = ["arn:aws:iam::123456789012:root"]
  }

  expect_failures = [var.operator_trusted_principal_arns]
}

run "refuses_a_session_or_a_bare_account" {
  command = plan

  variables {
    create_operator_role = true
    operator_trusted_principal_arns = [
      "arn:aws:sts::123456789012:assumed-role/memory-admin/alice",
      "123456789012",
    ]
  }

  expect_failures = [var.operator_trusted_principal_arns]
}

run "refuses_a_session_duration_out_of_range" {
  command = plan

  variables {
    operator_role_max_session_duration = 900
  }

  expect_failures = [var.operator_role_max_session_duration]
}

run "refuses_a_session_duration_over_twelve_hours" {
  command = plan

  variables {
    operator_role_max_session_duration = 43201
  }

  expect_failures = [var.operator_role_max_session_duration]
}
