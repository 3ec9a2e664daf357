# The KMS key policy holds: who may use the key (unchanged: the roles, under conditions), who may
# administer it (kms_key_administrator_arns, default the identity running Terraform), and that an
# IAM policy of the account alone can neither decrypt, nor create a grant, nor change the policy.
# Runs use `apply` because the policy names the roles, whose ARNs the mocks only give at apply.

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

run "no_wildcard_create_or_put_and_no_unconditioned_grant" {
  command = apply

  # A wildcard that would match kms:CreateGrant or kms:PutKeyPolicy ("*", "kms:*", "kms:Create*",
  # "kms:Put*", "kms:C*", ...) appears in no statement.
  assert {
    condition = alltrue(flatten([
      for statement in jsondecode(aws_kms_key.memory[0].policy).Statement : [
        for action in flatten([statement.Action]) :
        !(endswith(action, "*") && anytrue([
          for guarded in ["kms:CreateGrant", "kms:PutKeyPolicy"] : startswith(guarded, trimsuffix(action, "*"))
        ]))
      ]
    ]))
    error_message = "No key-policy statement may grant kms:*, kms:Create*, kms:Put* or any wildcard that covers CreateGrant or PutKeyPolicy."
  }

  assert {
    condition = alltrue([
      for statement in jsondecode(aws_kms_key.memory[0].policy).Statement :
      try(statement.Condition.Bool["kms:GrantIsForAWSResource"], null) == "true"
      if contains(flatten([statement.Action]), "kms:CreateGrant")
    ])
    error_message = "kms:CreateGrant may only be granted under Bool kms:GrantIsForAWSResource = true."
  }

  assert {
    condition = alltrue([
      for statement in jsondecode(aws_kms_key.memory[0].policy).Statement :
      statement.Effect == "Allow" && !can(statement.NotAction) && !can(statement.NotPrincipal)
    ])
    error_message = "Key-policy statements are plain Allow/Action/Principal statements."
  }
}

run "account_root_is_read_only" {
  command = apply

  assert {
    condition = [
      for statement in jsondecode(aws_kms_key.memory[0].policy).Statement : toset(flatten([statement.Action]))
      if contains(flatten([try(statement.Principal.AWS, [])]), "arn:aws:iam::123456789012:root")
    ] == [toset(["kms:Describe*", "kms:Get*", "kms:List*"])]
    error_message = "The account root (IAM policies of the account) appears in exactly one statement, with Describe*, Get* and List* only."
  }

  assert {
    condition = alltrue([
      for statement in jsondecode(aws_kms_key.memory[0].policy).Statement :
      alltrue([for principal in flatten([try(statement.Principal.AWS, [])]) : !endswith(principal, ":root") || principal == "arn:aws:iam::123456789012:root"])
    ])
    error_message = "No other account's root may appear in the key policy."
  }
}

run "default_administrator_is_the_callers_role" {
  command = apply

  assert {
    condition = [
      for statement in jsondecode(aws_kms_key.memory[0].policy).Statement : flatten([statement.Principal.AWS])
      if contains(["KeyAdministration", "KeyPolicyChangeBreakGlass"], statement.Sid)
    ] == [["arn:aws:iam::123456789012:role/ci/terraform-deployer"], ["arn:aws:iam::123456789012:role/ci/terraform-deployer"]]
    error_message = "By default the key administrator is the issuer of the session running Terraform (its role, with path), not the session itself."
  }

  assert {
    condition = [
      for statement in jsondecode(aws_kms_key.memory[0].policy).Statement : statement.Sid
      if contains(flatten([statement.Action]), "kms:PutKeyPolicy")
    ] == ["KeyPolicyChangeBreakGlass"]
    error_message = "kms:PutKeyPolicy (break-glass) is granted in exactly one statement, to the administrators."
  }

  assert {
    condition = toset(flatten([
      for statement in jsondecode(aws_kms_key.memory[0].policy).Statement : flatten([statement.Action])
      if statement.Sid == "KeyAdministration"
    ])) == toset(local.kms_key_administration_actions) && length(local.kms_key_administration_actions) > 0
    error_message = "The administration statement grants exactly the listed administration actions."
  }

  assert {
    condition = alltrue(flatten([
      for statement in jsondecode(aws_kms_key.memory[0].policy).Statement : [
        for action in flatten([statement.Action]) :
        !strcontains(action, "*") && !anytrue([
          for crypto in ["kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey", "kms:ReEncrypt", "kms:CreateGrant", "kms:Sign", "kms:GenerateMac", "kms:DeriveSharedSecret"] :
          startswith(action, crypto)
        ])
      ]
      if contains(flatten([try(statement.Principal.AWS, [])]), "arn:aws:iam::123456789012:role/ci/terraform-deployer")
    ]))
    error_message = "Administrators get no cryptographic operation (Decrypt, GenerateDataKey, Encrypt, ReEncrypt, ...), no CreateGrant and no wildcard action."
  }

  assert {
    condition = length([
      for statement in jsondecode(aws_kms_key.memory[0].policy).Statement : statement
      if statement.Sid == "EnvelopeKeysWithS3memoryContext" &&
      try(toset(flatten([statement.Principal.AWS])), toset([])) == toset([aws_iam_role.this["memory"].arn, aws_iam_role.this["agent"].arn]) &&
      toset(flatten([statement.Action])) == toset(["kms:GenerateDataKey", "kms:Decrypt"])
    ]) == 1
    error_message = "Key use stays with the two roles (with the s3memory encryption context)."
  }
}

run "explicit_administrators_replace_the_default" {
  command = apply

  override_data {
    target = data.aws_iam_session_context.current
    values = { issuer_arn = "arn:aws:iam::123456789012:role/pipeline/deployer" }
  }

  variables {
    kms_key_administrator_arns = [
      "arn:aws:iam::123456789012:role/pipeline/deployer",
      "arn:aws:iam::123456789012:role/security/key-admin",
      "arn:aws:iam::123456789012:user/break-glass",
    ]
  }

  assert {
    condition = alltrue([
      for statement in jsondecode(aws_kms_key.memory[0].policy).Statement :
      flatten([statement.Principal.AWS]) == [
        "arn:aws:iam::123456789012:role/pipeline/deployer",
        "arn:aws:iam::123456789012:role/security/key-admin",
        "arn:aws:iam::123456789012:user/break-glass",
      ]
      if contains(["KeyAdministration", "KeyPolicyChangeBreakGlass"], statement.Sid)
    ])
    error_message = "An explicit kms_key_administrator_arns is the whole administrator list."
  }

  assert {
    condition     = !strcontains(aws_kms_key.memory[0].policy, "terraform-deployer")
    error_message = "The default administrator is not added to an explicit list."
  }
}

run "explicit_administrators_must_include_the_caller" {
  command = plan

  variables {
    kms_key_administrator_arns = ["arn:aws:iam::123456789012:role/security/key-admin"]
  }

  expect_failures = [aws_kms_key.memory[0]]
}

run "root_user_caller_is_refused_as_default_administrator" {
  command = plan

  override_data {
    target = data.aws_iam_session_context.current
    values = { issuer_arn = "arn:aws:iam::123456789012:root" }
  }

  expect_failures = [aws_kms_key.memory[0]]
}

run "root_user_caller_with_explicit_administrators_is_refused_too" {
  command = plan

  override_data {
    target = data.aws_iam_session_context.current
    values = { issuer_arn = "arn:aws:iam::123456789012:root" }
  }

  variables {
    kms_key_administrator_arns = ["arn:aws:iam::123456789012:role/security/key-admin"]
  }

  expect_failures = [aws_kms_key.memory[0]]
}
