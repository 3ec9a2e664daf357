# Functions from the same deployment zip (built by `make lambda-zip`):
#   - memory: executes memory-tool commands (s3memory.aws_lambda.memory_handler);
#   - agent (only with local.agent_enabled: create_agent_function, by default when
#     anthropic_api_key_secret_arn is set): runs a Claude conversation with the memory tool
#     (s3memory.aws_lambda.agent_handler);
#   - expiry (only with var.expiry_idle_days): deletes the memory of idle users
#     (s3memory.aws_lambda.expiry.handler), run by the EventBridge Scheduler schedule in expiry.tf;
#   - mcp (only with var.create_mcp_endpoint): the memory tool for MCP clients over streamable HTTP
#     (s3memory.aws_lambda.mcp_handler), behind the HTTP API's /mcp route (api.tf).
# memory, agent and mcp are meant to be invoked synchronously (API Gateway or the Lambda Invoke API),
# so the caller sees failures; the expiry function is invoked asynchronously by the schedule. With
# var.dead_letter_target_arn the memory, agent and expiry functions get a dead-letter target (a direct
# invoker may invoke the first two asynchronously), and with var.vpc_subnet_ids every function runs in
# the VPC (network.tf); both are opt-in, hence the skips below.
#
# The checkov checks skipped on the functions are justified next to each skip.

locals {
  lambda_source_code_hash = filebase64sha256(var.lambda_zip_path)

  # Where every function finds the store: the bucket, the users' prefix, the key and the storage
  # format; on format 2 (or with a store_id) the store's id (store.tf).
  storage_environment = merge(
    {
      S3MEMORY_BUCKET     = local.memory_bucket_name
      S3MEMORY_PREFIX     = var.memory_prefix
      S3MEMORY_KMS_KEY_ID = local.kms_key_arn
    },
    local.store_environment,
  )

  # Limits and guard, for both functions. A variable is set only when its value is not the
  # function's own default, which keeps the environment minimal.
  common_environment = merge(
    local.storage_environment,
    var.memory_quota_bytes == null ? {} : { S3MEMORY_QUOTA_BYTES = format("%d", var.memory_quota_bytes) },
    var.memory_quota_files == null ? {} : { S3MEMORY_QUOTA_FILES = format("%d", var.memory_quota_files) },
    var.content_guard_mode == "refuse" ? {} : { S3MEMORY_GUARD = var.content_guard_mode },
    var.max_file_bytes == 1048576 ? {} : { S3MEMORY_MAX_FILE_BYTES = format("%d", var.max_file_bytes) },
  )

  # Events without API Gateway's requestContext name their own user_id. By default they are served
  # only when no HTTP API fronts the function; always set explicitly.
  memory_direct_invocation = coalesce(var.memory_function_allow_direct_invocation, !var.create_http_api) ? "allow" : "refuse"

  # The function verifies every HTTP API event's bearer token itself (issuer's JWKS, iss, aud, exp,
  # scopes), so a forged API Gateway-shaped event from a direct invoker is refused.
  memory_jwt_environment = var.create_http_api ? merge(
    {
      S3MEMORY_JWT_ISSUER   = var.jwt_issuer
      S3MEMORY_JWT_AUDIENCE = join(",", var.jwt_audience)
    },
    length(var.jwt_authorization_scopes) == 0 ? {} : { S3MEMORY_JWT_SCOPES = join(" ", var.jwt_authorization_scopes) },
  ) : {}

  # Shared memories mounted by a verified token's claims (S3MEMORY_MOUNTS), for the two functions
  # that verify tokens: the memory function and the MCP function. No variable without a grant. Its
  # size is counted in bytes of UTF-8 (length() would count characters): base64 has 4 characters for
  # every 3 bytes, less one for each padding '='.
  shared_memory_mounts_json = jsonencode([
    for grant in var.shared_memory_mounts : {
      claim  = grant.claim
      value  = grant.value
      point  = grant.point
      memory = grant.memory
      mode   = grant.mode
    }
  ])
  shared_memory_mounts_bytes = (
    length(base64encode(local.shared_memory_mounts_json)) / 4 * 3 -
    length(regexall("=", base64encode(local.shared_memory_mounts_json)))
  )
  shared_memory_mounts_budget = 3000
  mounts_environment = length(var.shared_memory_mounts) == 0 ? {} : {
    S3MEMORY_MOUNTS = local.shared_memory_mounts_json
  }

  # The memory function's environment, and its size as Lambda counts it against its 4 KB limit (the
  # UTF-8 bytes of every name and value); the MCP function's is the same less one variable plus
  # S3MEMORY_MCP_URL, checked on that function.
  memory_environment = merge(
    local.common_environment,
    { S3MEMORY_DIRECT_INVOCATION = local.memory_direct_invocation },
    local.memory_jwt_environment,
    local.mounts_environment,
  )
  # A key the module creates has its ARN only after apply: counted at its exact length (a key id,
  # multi-Region or not, is 36 characters), so that the limit is checked at plan.
  memory_environment_counted = merge(local.memory_environment, var.create_kms_key ? {
    S3MEMORY_KMS_KEY_ID = "arn:${local.partition}:kms:${local.region}:${local.account_id}:key/${join("", [for i in range(36) : "0"])}"
  } : {})
  memory_environment_text = join("", [for name, value in local.memory_environment_counted : "${name}${value == null ? "" : value}"])
  memory_environment_bytes = (
    length(base64encode(local.memory_environment_text)) / 4 * 3 -
    length(regexall("=", base64encode(local.memory_environment_text)))
  )

  # The public URL of the MCP route: the `resource` of the protected-resource metadata the MCP
  # function serves, and what clients are given. null when there is no HTTP API (the MCP
  # function's precondition then refuses the plan).
  mcp_url = var.mcp_url != null ? var.mcp_url : (
    var.create_http_api ? "${aws_apigatewayv2_api.this[0].api_endpoint}/mcp" : null
  )
}

# Each function's own settings, by its key (data.tf: local.functions are those the variables create);
# the rest is the same for all, in the resource below.
locals {
  function_settings = {
    memory = {
      description          = "s3memory: executes Claude memory-tool commands against s3://${var.bucket_name}/${var.memory_prefix}"
      handler              = "s3memory.aws_lambda.memory_handler"
      timeout              = var.memory_function_timeout
      memory_size          = var.memory_function_memory_size
      reserved_concurrency = var.memory_function_reserved_concurrency
      environment          = local.memory_environment
    }
    agent = {
      description          = "s3memory: Claude agent with the memory tool on s3://${var.bucket_name}/${var.memory_prefix}"
      handler              = "s3memory.aws_lambda.agent_handler"
      timeout              = var.agent_function_timeout
      memory_size          = var.agent_function_memory_size
      reserved_concurrency = var.agent_function_reserved_concurrency
      environment = merge(
        local.common_environment,
        { S3MEMORY_MODEL = var.agent_model },
        var.anthropic_api_key_secret_arn == null ? {} : { ANTHROPIC_API_KEY_SECRET_ARN = var.anthropic_api_key_secret_arn },
      )
    }
    # Only with expiry_idle_days (the number of days is in the description and the environment).
    expiry = !local.expiry_enabled ? null : {
      description = "s3memory: deletes the memory of users idle for ${var.expiry_idle_days} days from s3://${var.bucket_name} (never their keys)"
      handler     = "s3memory.aws_lambda.expiry.handler"
      timeout     = var.expiry_function_timeout
      memory_size = 256
      # One run at a time: a run still going when the next one is due is never overlapped (the next
      # invocation waits in Lambda's asynchronous queue).
      reserved_concurrency = 1
      environment = merge(
        local.storage_environment,
        { S3MEMORY_EXPIRE_IDLE_DAYS = format("%d", var.expiry_idle_days) },
      )
    }
    mcp = {
      description = "s3memory: the memory tool for MCP clients on s3://${var.bucket_name}/${var.memory_prefix}"
      handler     = "s3memory.aws_lambda.mcp_handler"
      # A request is a memory command or less, as the memory function's; the integration's timeout
      # (api.tf) follows the same variable.
      timeout              = var.memory_function_timeout
      memory_size          = var.mcp_function_memory_size
      reserved_concurrency = var.mcp_function_reserved_concurrency
      # The memory function's settings and token check; no S3MEMORY_DIRECT_INVOCATION: the MCP handler
      # refuses every event that is not an API Gateway HTTP API event, whatever it says.
      environment = merge(
        local.common_environment,
        local.memory_jwt_environment,
        local.mounts_environment,
        { S3MEMORY_MCP_URL = local.mcp_url },
      )
    }
  }
}

resource "aws_lambda_function" "this" {
  #checkov:skip=CKV_AWS_116:Opt-in through var.dead_letter_target_arn, for the memory, agent and expiry functions: the memory, agent and MCP functions are meant to be invoked synchronously (API Gateway / Invoke API), where the caller receives errors, and a DLQ only serves asynchronous invocations (and would hold the users' commands, file text and prompts); the expiry function is invoked by its own schedule with the input {}, a failed run's error is in its log group and the users it did not reach are still idle at the next run.
  #checkov:skip=CKV_AWS_117:Opt-in through var.vpc_subnet_ids: the functions reach S3, KMS, the JWT issuer and the Anthropic API over public endpoints with IAM and TLS; a VPC adds endpoint or NAT cost without reducing exposure, unless the organisation requires one.
  #checkov:skip=CKV_AWS_173:Environment variables hold no secrets (bucket, prefix, key ARN, issuer and public URLs, a number of days; the agent's API key is fetched from Secrets Manager by ARN at run time); encrypting them with a CMK adds nothing.
  #checkov:skip=CKV_AWS_272:Code signing is an organisation-level choice (signing profile); the zip is built and deployed by the same pipeline.
  #checkov:skip=CKV_AWS_50:X-Ray is opt-in via var.tracing_mode = "Active" because it needs wildcard xray permissions and costs money.
  for_each = { for key, name in local.functions : key => merge(local.function_settings[key], { name = name }) }

  function_name                  = each.value.name
  description                    = each.value.description
  role                           = aws_iam_role.this[each.key].arn
  handler                        = each.value.handler
  runtime                        = var.lambda_runtime
  architectures                  = [var.lambda_architecture]
  filename                       = var.lambda_zip_path
  source_code_hash               = local.lambda_source_code_hash
  timeout                        = each.value.timeout
  memory_size                    = each.value.memory_size
  reserved_concurrent_executions = each.value.reserved_concurrency

  environment {
    variables = each.value.environment
  }

  # One JSON record per invocation, written by Lambda's JSON formatter with the handler's fields
  # (and the EMF block) at the top level; it is logged at INFO, so log_level must be INFO or lower.
  logging_config {
    log_format            = "JSON"
    application_log_level = var.log_level
    system_log_level      = "WARN"
  }

  # An asynchronous invocation's event, after Lambda's retries failed (network.tf).
  dynamic "dead_letter_config" {
    for_each = local.dead_letter_enabled && contains(local.dead_letter_functions, each.key) ? [var.dead_letter_target_arn] : []
    content {
      target_arn = dead_letter_config.value
    }
  }

  dynamic "vpc_config" {
    for_each = local.vpc_enabled ? [1] : []
    content {
      subnet_ids         = var.vpc_subnet_ids
      security_group_ids = var.vpc_security_group_ids
    }
  }

  tracing_config {
    mode = var.tracing_mode
  }

  tags = local.tags

  # Inputs that only make sense together (variable validations cannot see each other before
  # Terraform 1.9): checked on the memory function, the one function that always exists, so that
  # each is refused once; and the MCP function's own.
  lifecycle {
    precondition {
      condition     = each.key != "memory" || var.create_kms_key == (var.kms_key_arn == null)
      error_message = "create_kms_key = false needs kms_key_arn (the ARN of your key); with create_kms_key = true (the default) the module creates the key, so leave kms_key_arn unset."
    }
    precondition {
      condition     = each.key != "memory" || length(var.vpc_subnet_ids) > 0 == length(var.vpc_security_group_ids) > 0
      error_message = "Set both vpc_subnet_ids and vpc_security_group_ids (every function in those subnets, with those security groups) or neither (no VPC)."
    }
    # Shared memory mounts (S3MEMORY_MOUNTS, on the memory and MCP functions).
    precondition {
      condition     = each.key != "memory" || length(var.shared_memory_mounts) == 0 || var.create_http_api
      error_message = "shared_memory_mounts needs create_http_api = true: a mount is granted only by the claims of a token the function verified itself (S3MEMORY_JWT_ISSUER), and only HTTP API events carry one. Set create_http_api = true (with jwt_issuer and jwt_audience), or shared_memory_mounts = []."
    }
    precondition {
      condition     = each.key != "memory" || length(var.shared_memory_mounts) == 0 || var.storage_format == 2
      error_message = "shared_memory_mounts needs storage_format = 2: shared memories exist only in format 2 (docs/shared.md; on format 1 their names would be in every key). Move the store to format 2 (storage_format = 2 with migrating_from_format_1 = true, then `s3memory migrate`; docs/format-v2.md), or set shared_memory_mounts = []."
    }
    precondition {
      condition     = each.key != "memory" || local.shared_memory_mounts_bytes <= local.shared_memory_mounts_budget
      error_message = "shared_memory_mounts encodes to ${local.shared_memory_mounts_bytes} bytes of S3MEMORY_MOUNTS, over the module's budget of ${local.shared_memory_mounts_budget} bytes (Lambda allows 4 KB for all of a function's environment variables). Use fewer grants, or shorter claims, values, points and memory names."
    }
    precondition {
      condition     = each.key != "memory" || local.memory_environment_bytes <= 4096
      error_message = "The memory function's environment variables come to ${local.memory_environment_bytes} bytes, over Lambda's 4 KB (4,096 bytes) for all of them: shorten the longest settings (jwt_audience, jwt_authorization_scopes, shared_memory_mounts, store_id)."
    }
    precondition {
      condition     = each.key != "mcp" || var.create_http_api
      error_message = "create_mcp_endpoint = true needs create_http_api = true: the MCP endpoint is a route of the HTTP API, behind its JWT authorizer. Set create_http_api = true (with jwt_issuer and jwt_audience), or create_mcp_endpoint = false."
    }
  }

  # The role must be able to write logs (and the log group must exist with its retention) before
  # the first invocation, or Lambda would create an unmanaged group.
  depends_on = [
    aws_iam_role_policy.this,
    aws_cloudwatch_log_group.this,
  ]
}

# create_agent_function = true without a secret: the function has no way to get an API key (the module
# manages its environment), so every invocation would fail. Planned anyway (the caller said so), with
# this warning.
check "agent_has_an_api_key" {
  assert {
    condition     = !local.agent_enabled || var.anthropic_api_key_secret_arn != null
    error_message = "create_agent_function = true without anthropic_api_key_secret_arn: the agent function has no Anthropic API key and every invocation will fail. Store the key in Secrets Manager and set anthropic_api_key_secret_arn, or leave create_agent_function unset (null) to create the function only with a secret."
  }
}
