# Copy to my.tfvars (git ignores it), set bucket_name there, then: terraform apply -var-file=my.tfvars
region      = "eu-west-1"
bucket_name = "my-org-agent-memory-dev" # must be globally unique: change it
name_prefix = "s3memory-dev"

# Built by `make lambda-zip` at the repository root.
lambda_zip_path = "../../../dist/lambda.zip"

# Storage format: 2 (private names, docs/format-v2.md) or 1 (plain names), chosen when the store is
# created. On format 2 the store id (default: the bucket's name) must never change; a replica's
# readers set the source's. A store deployed in format 1 keeps storage_format = 1 (or migrates: see
# docs/deploy.md, "Storage format").
storage_format = 2
# store_id     = ""

# Idle expiry: a scheduled function deletes the memory of users idle this many days (never their
# wrapped data keys; deleted files stay recoverable as noncurrent versions for 30 days). null (off)
# keeps memory forever. See docs/deploy.md, "Idle expiry".
expiry_idle_days = null
# expiry_schedule_expression = "rate(1 day)"

# Who administers the KMS key (with kms:PutKeyPolicy, the break-glass path). Unset: the identity that
# runs Terraform. A list must include that identity, e.g. the CI role and a break-glass role.
# kms_key_administrator_arns = ["arn:aws:iam::123456789012:role/ci-deployer", "arn:aws:iam::123456789012:role/break-glass"]

# Per-user limits (null: none).
memory_quota_bytes = null
memory_quota_files = null

# The agent function reads its Anthropic API key from this secret (create it first). Without a secret
# there is no agent function (create_agent_function = true or false decides regardless).
# anthropic_api_key_secret_arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:anthropic-api-key-AbCdEf"

# Optional HTTP API with a JWT authorizer, e.g. a Cognito user pool.
create_http_api = false
# jwt_issuer    = "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_EXAMPLE"
# jwt_audience  = ["your-app-client-id"]
# jwt_authorization_scopes = ["memory/read"] # optional: the token must carry one of them
# create_mcp_endpoint = true # the memory tool for MCP clients at <api_endpoint>/mcp (output mcp_url)
# Shared memories (docs/shared.md) mounted by the token's claims, read-only unless mode = "read_write";
# needs the HTTP API and storage_format = 2. Their names and the claims are then in plaintext in the
# functions' configuration and the Terraform state.
# shared_memory_mounts = [
#   { claim = "groups", value = "acme", point = "/memories/team", memory = "team-acme" },
#   { claim = "groups", value = "acme-curators", point = "/memories/team", memory = "team-acme", mode = "read_write" },
# ]

# Optional operator role for the s3memory operator commands (verify, export, erase, ...): who may
# assume it, with MFA unless operator_require_mfa = false (see docs/deploy.md, "Operator role").
create_operator_role = false
# operator_trusted_principal_arns = ["arn:aws:iam::123456789012:role/memory-admins"]
