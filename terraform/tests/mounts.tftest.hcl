# Shared memory mounts (shared_memory_mounts): off by default, and then no function has
# S3MEMORY_MOUNTS; set, the memory and MCP functions get the grants JSON-encoded, exactly, and the
# agent and expiry functions nothing; every rule of the variable (s3memory.mounts: the point, the
# memory, the mode, claim and value, one memory per point, at most 16 points) refuses what the
# package refuses, at its boundaries; the preconditions need the HTTP API and storage format 2 and
# keep the setting within its byte budget. tests/deploy/test_terraform.py feeds the module's encoding to
# s3memory.mounts.grants_from_json, and checks the point rules against the package's own.

mock_provider "aws" {
  source = "./tests/mocks"
}

variables {
  bucket_name     = "s3memory-test-bucket"
  lambda_zip_path = "tests/fixtures/lambda.zip"

  create_http_api = true
  jwt_issuer      = "https://issuer.example.com"
  jwt_audience    = ["s3memory-client"]
  # The agent function exists (it has a key), so that each run can show it gets no mounts.
  anthropic_api_key_secret_arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:anthropic-api-key-AbCdEf"

  # A grant whose fields each run replaces one at a time.
  good = { claim = "groups", value = "acme", point = "/memories/team", memory = "team-acme" }
}

run "off_by_default" {
  command = apply

  variables {
    create_mcp_endpoint = true
    expiry_idle_days    = 30
  }

  assert {
    condition = alltrue([
      for fn in [aws_lambda_function.this["memory"], aws_lambda_function.this["agent"], aws_lambda_function.this["mcp"], aws_lambda_function.this["expiry"]] :
      !contains(keys(fn.environment[0].variables), "S3MEMORY_MOUNTS")
    ])
    error_message = "Without shared_memory_mounts no function has S3MEMORY_MOUNTS."
  }
}

run "off_without_the_http_api" {
  command = plan

  variables {
    create_http_api = false
  }

  assert {
    condition = alltrue([
      for fn in [aws_lambda_function.this["memory"], aws_lambda_function.this["agent"]] :
      !contains(keys(fn.environment[0].variables), "S3MEMORY_MOUNTS")
    ])
    error_message = "By default (no HTTP API) neither function has S3MEMORY_MOUNTS."
  }
}

run "set" {
  command = apply

  variables {
    create_mcp_endpoint = true
    expiry_idle_days    = 30
    shared_memory_mounts = [
      { claim = "groups", value = "acme", point = "/memories/team", memory = "team-acme" },
      { claim = "groups", value = "acme-curators", point = "/memories/team", memory = "team-acme", mode = "read_write" },
      { claim = "scope", value = "runbooks", point = "/memories/runbooks", memory = "runbooks", mode = "read_only" },
    ]
  }

  # Terraform's jsonencode: keys sorted, no spaces; mode always present (read_only when left out).
  assert {
    condition     = aws_lambda_function.this["memory"].environment[0].variables["S3MEMORY_MOUNTS"] == "[{\"claim\":\"groups\",\"memory\":\"team-acme\",\"mode\":\"read_only\",\"point\":\"/memories/team\",\"value\":\"acme\"},{\"claim\":\"groups\",\"memory\":\"team-acme\",\"mode\":\"read_write\",\"point\":\"/memories/team\",\"value\":\"acme-curators\"},{\"claim\":\"scope\",\"memory\":\"runbooks\",\"mode\":\"read_only\",\"point\":\"/memories/runbooks\",\"value\":\"runbooks\"}]"
    error_message = "The memory function's S3MEMORY_MOUNTS is not exactly the three grants, JSON-encoded."
  }

  assert {
    condition     = aws_lambda_function.this["mcp"].environment[0].variables["S3MEMORY_MOUNTS"] == aws_lambda_function.this["memory"].environment[0].variables["S3MEMORY_MOUNTS"]
    error_message = "The MCP function's S3MEMORY_MOUNTS is the memory function's."
  }

  assert {
    condition = (
      !contains(keys(aws_lambda_function.this["agent"].environment[0].variables), "S3MEMORY_MOUNTS") &&
      !contains(keys(aws_lambda_function.this["expiry"].environment[0].variables), "S3MEMORY_MOUNTS")
    )
    error_message = "Neither the agent function (direct-invoked, no token) nor the expiry function gets S3MEMORY_MOUNTS."
  }

  # The setting needs S3MEMORY_JWT_ISSUER on the same function (settings.Edge.from_env).
  assert {
    condition = alltrue([
      for fn in [aws_lambda_function.this["memory"], aws_lambda_function.this["mcp"]] :
      fn.environment[0].variables["S3MEMORY_JWT_ISSUER"] == "https://issuer.example.com"
    ])
    error_message = "Both functions with S3MEMORY_MOUNTS verify tokens (S3MEMORY_JWT_ISSUER)."
  }

  assert {
    condition = (
      { for name, value in aws_lambda_function.this["mcp"].environment[0].variables : name => value if name != "S3MEMORY_MCP_URL" } ==
      { for name, value in aws_lambda_function.this["memory"].environment[0].variables : name => value if name != "S3MEMORY_DIRECT_INVOCATION" }
    )
    error_message = "The MCP function's environment is still the memory function's, but for S3MEMORY_DIRECT_INVOCATION and S3MEMORY_MCP_URL."
  }
}

# The boundaries the package accepts: 16 points, a name of 64 characters (also of 64 non-ASCII
# characters: code points, as Python counts them), a memory name of 63; characters the package takes
# in a point ('%' but for an encoded separator, dots inside or at the end, spaces, non-ASCII).
run "accepts_the_boundaries" {
  command = plan

  variables {
    shared_memory_mounts = concat(
      [
        { claim = "groups", value = "a", point = "/memories/${join("", [for i in range(64) : "p"])}", memory = join("", [for i in range(63) : "m"]) },
        { claim = "groups", value = "b", point = "/memories/${join("", [for i in range(64) : "é"])}", memory = "0.x_y-z" },
        { claim = "sub", value = "user one", point = "/memories/a", memory = "a" },
        { claim = "scp", value = "x", point = "/memories/team..", memory = "b" },
        { claim = "groups", value = "c", point = "/memories/100%", memory = "c" },
        { claim = "groups", value = "d", point = "/memories/x%2e", memory = "d" },
        { claim = "groups", value = "e", point = "/memories/my team", memory = "e" },
        { claim = "groups", value = "f", point = "/memories/node_modules2", memory = "f" },
      ],
      [for i in range(8) : { claim = "groups", value = "g${i}", point = "/memories/g${i}", memory = "g${i}", mode = "read_write" }],
    )
  }

  assert {
    condition = (
      length(jsondecode(aws_lambda_function.this["memory"].environment[0].variables["S3MEMORY_MOUNTS"])) == 16 &&
      length(distinct([for grant in jsondecode(aws_lambda_function.this["memory"].environment[0].variables["S3MEMORY_MOUNTS"]) : grant.point])) == 16
    )
    error_message = "16 grants at 16 points are accepted and all reach S3MEMORY_MOUNTS."
  }
}

run "refuses_a_null_field" {
  command = plan

  variables {
    # a null claim
    shared_memory_mounts = [{ claim = null, value = "acme", point = "/memories/team", memory = "team-acme" }]
  }

  expect_failures = [var.shared_memory_mounts]
}

run "refuses_an_empty_claim" {
  command = plan

  variables {
    # an empty claim
    shared_memory_mounts = [merge(var.good, { claim = "" })]
  }

  expect_failures = [var.shared_memory_mounts]
}

run "refuses_an_empty_value" {
  command = plan

  variables {
    # an empty value
    shared_memory_mounts = [merge(var.good, { value = "" })]
  }

  expect_failures = [var.shared_memory_mounts]
}

run "refuses_a_value_with_a_control_character" {
  command = plan

  variables {
    # a newline
    shared_memory_mounts = [merge(var.good, { value = "acme\n" })]
  }

  expect_failures = [var.shared_memory_mounts]
}

run "refuses_a_value_with_a_format_character" {
  command = plan

  variables {
    # a zero-width space (category Cf)
    shared_memory_mounts = [merge(var.good, { value = "ac\u200bme" })]
  }

  expect_failures = [var.shared_memory_mounts]
}

run "refuses_a_point_outside_memories" {
  command = plan

  variables {
    shared_memory_mounts = [merge(var.good, { point = "/team" })]
  }

  expect_failures = [var.shared_memory_mounts]
}

run "refuses_the_root_as_point" {
  command = plan

  variables {
    shared_memory_mounts = [merge(var.good, { point = "/memories" })]
  }

  expect_failures = [var.shared_memory_mounts]
}

run "refuses_the_root_with_a_slash_as_point" {
  command = plan

  variables {
    shared_memory_mounts = [merge(var.good, { point = "/memories/" })]
  }

  expect_failures = [var.shared_memory_mounts]
}

run "refuses_a_point_with_a_trailing_slash" {
  command = plan

  variables {
    # not canonical
    shared_memory_mounts = [merge(var.good, { point = "/memories/team/" })]
  }

  expect_failures = [var.shared_memory_mounts]
}

run "refuses_a_point_two_levels_down" {
  command = plan

  variables {
    shared_memory_mounts = [merge(var.good, { point = "/memories/team/notes" })]
  }

  expect_failures = [var.shared_memory_mounts]
}

run "refuses_a_point_name_of_65_characters" {
  command = plan

  variables {
    # MAX_POINT_NAME is 64
    shared_memory_mounts = [merge(var.good, { point = "/memories/${join("", [for i in range(65) : "p"])}" })]
  }

  expect_failures = [var.shared_memory_mounts]
}

run "refuses_a_point_name_of_65_non_ascii_characters" {
  command = plan

  variables {
    # 65 code points
    shared_memory_mounts = [merge(var.good, { point = "/memories/${join("", [for i in range(65) : "é"])}" })]
  }

  expect_failures = [var.shared_memory_mounts]
}

run "refuses_a_hidden_point" {
  command = plan

  variables {
    shared_memory_mounts = [merge(var.good, { point = "/memories/.team" })]
  }

  expect_failures = [var.shared_memory_mounts]
}

run "refuses_a_dot_dot_point" {
  command = plan

  variables {
    shared_memory_mounts = [merge(var.good, { point = "/memories/.." })]
  }

  expect_failures = [var.shared_memory_mounts]
}

run "refuses_node_modules_as_point" {
  command = plan

  variables {
    # hidden from listings
    shared_memory_mounts = [merge(var.good, { point = "/memories/node_modules" })]
  }

  expect_failures = [var.shared_memory_mounts]
}

run "refuses_a_point_with_a_backslash" {
  command = plan

  variables {
    shared_memory_mounts = [merge(var.good, { point = "/memories/a\\b" })]
  }

  expect_failures = [var.shared_memory_mounts]
}

run "refuses_a_point_with_a_fullwidth_backslash" {
  command = plan

  variables {
    # NFKC: a backslash
    shared_memory_mounts = [merge(var.good, { point = "/memories/a\uff3cb" })]
  }

  expect_failures = [var.shared_memory_mounts]
}

run "refuses_a_point_with_a_tab" {
  command = plan

  variables {
    shared_memory_mounts = [merge(var.good, { point = "/memories/te\tam" })]
  }

  expect_failures = [var.shared_memory_mounts]
}

run "refuses_a_point_with_an_encoded_slash" {
  command = plan

  variables {
    shared_memory_mounts = [merge(var.good, { point = "/memories/a%2Fb" })]
  }

  expect_failures = [var.shared_memory_mounts]
}

run "refuses_a_point_with_an_encoded_backslash" {
  command = plan

  variables {
    shared_memory_mounts = [merge(var.good, { point = "/memories/a%5cb" })]
  }

  expect_failures = [var.shared_memory_mounts]
}

run "refuses_a_point_with_a_twice_encoded_slash" {
  command = plan

  variables {
    # decoded twice
    shared_memory_mounts = [merge(var.good, { point = "/memories/a%252fb" })]
  }

  expect_failures = [var.shared_memory_mounts]
}

run "refuses_an_encoded_dot_dot_point" {
  command = plan

  variables {
    shared_memory_mounts = [merge(var.good, { point = "/memories/%2e%2E" })]
  }

  expect_failures = [var.shared_memory_mounts]
}

run "refuses_a_look_alike_dot_dot_point" {
  command = plan

  variables {
    # NFKC: '..'
    shared_memory_mounts = [merge(var.good, { point = "/memories/\uff0e\u2024" })]
  }

  expect_failures = [var.shared_memory_mounts]
}

run "refuses_a_two_dot_leader_point" {
  command = plan

  variables {
    # NFKC: '..'
    shared_memory_mounts = [merge(var.good, { point = "/memories/\u2025" })]
  }

  expect_failures = [var.shared_memory_mounts]
}

run "refuses_an_uppercase_memory" {
  command = plan

  variables {
    shared_memory_mounts = [merge(var.good, { memory = "Team" })]
  }

  expect_failures = [var.shared_memory_mounts]
}

run "refuses_a_memory_starting_with_a_dot" {
  command = plan

  variables {
    shared_memory_mounts = [merge(var.good, { memory = ".team" })]
  }

  expect_failures = [var.shared_memory_mounts]
}

run "refuses_an_empty_memory" {
  command = plan

  variables {
    shared_memory_mounts = [merge(var.good, { memory = "" })]
  }

  expect_failures = [var.shared_memory_mounts]
}

run "refuses_a_memory_name_of_64_characters" {
  command = plan

  variables {
    # SharedName is 1 to 63
    shared_memory_mounts = [merge(var.good, { memory = join("", [for i in range(64) : "m"]) })]
  }

  expect_failures = [var.shared_memory_mounts]
}

run "refuses_a_memory_with_a_slash" {
  command = plan

  variables {
    shared_memory_mounts = [merge(var.good, { memory = "team/acme" })]
  }

  expect_failures = [var.shared_memory_mounts]
}

run "refuses_an_unknown_mode" {
  command = plan

  variables {
    shared_memory_mounts = [merge(var.good, { mode = "rw" })]
  }

  expect_failures = [var.shared_memory_mounts]
}

run "refuses_a_null_grant" {
  command = plan

  variables {
    shared_memory_mounts = [var.good, null]
  }

  expect_failures = [var.shared_memory_mounts]
}

run "refuses_two_memories_at_one_point" {
  command = plan

  variables {
    shared_memory_mounts = [var.good, merge(var.good, { value = "beta", memory = "team-beta" })]
  }

  expect_failures = [var.shared_memory_mounts]
}

run "refuses_17_points" {
  command = plan

  variables {
    shared_memory_mounts = [for i in range(17) : merge(var.good, { point = "/memories/p${i}" })]
  }

  expect_failures = [var.shared_memory_mounts]
}

# The preconditions, on the memory function.

run "refuses_mounts_without_the_http_api" {
  command = plan

  variables {
    create_http_api      = false
    shared_memory_mounts = [var.good]
  }

  expect_failures = [aws_lambda_function.this["memory"]]
}

run "refuses_mounts_on_storage_format_1" {
  command = plan

  variables {
    storage_format       = 1
    shared_memory_mounts = [var.good]
  }

  expect_failures = [aws_lambda_function.this["memory"]]
}

# The budget counts bytes of UTF-8: 1,000 two-byte characters and 909 one-byte ones make a value
# of 2,909 bytes and the setting exactly 3,000 bytes (2,000 characters).
run "accepts_3000_bytes" {
  command = plan

  variables {
    shared_memory_mounts = [merge(var.good, { point = "/memories/team", memory = "team", value = "${join("", [for i in range(1000) : "é"])}${join("", [for i in range(909) : "a"])}" })]
  }

  assert {
    condition     = length(aws_lambda_function.this["memory"].environment[0].variables["S3MEMORY_MOUNTS"]) == 2000
    error_message = "The setting of 3,000 bytes (2,000 characters) is accepted."
  }
}

run "refuses_3001_bytes" {
  command = plan

  variables {
    shared_memory_mounts = [merge(var.good, { point = "/memories/team", memory = "team", value = "${join("", [for i in range(1000) : "é"])}${join("", [for i in range(910) : "a"])}" })]
  }

  expect_failures = [aws_lambda_function.this["memory"]]
}

# Lambda's 4 KB covers all of a function's variables: mounts within their budget and an audience of
# 8 x 200 characters together exceed it, and the memory function's total is what is refused.
run "refuses_an_environment_over_4_kb" {
  command = plan

  variables {
    jwt_audience         = [for i in range(8) : "${i}${join("", [for j in range(199) : "a"])}"]
    shared_memory_mounts = [merge(var.good, { point = "/memories/team", memory = "team", value = "${join("", [for i in range(1000) : "é"])}${join("", [for i in range(909) : "a"])}" })]
  }

  expect_failures = [aws_lambda_function.this["memory"]]
}

run "accepts_the_same_mounts_with_a_short_audience" {
  command = plan

  variables {
    shared_memory_mounts = [merge(var.good, { point = "/memories/team", memory = "team", value = "${join("", [for i in range(1000) : "é"])}${join("", [for i in range(909) : "a"])}" })]
  }

  assert {
    condition     = length(aws_lambda_function.this["memory"].environment[0].variables["S3MEMORY_MOUNTS"]) == 2000
    error_message = "Mounts of 3,000 bytes with the tests' short audience fit in 4 KB."
  }
}
