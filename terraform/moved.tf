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
