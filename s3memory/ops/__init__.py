"""What an operator does to a store: users and their files, history and restore, export and import,
key rotation and idle expiry. The command line and the Lambda functions are thin layers over it."""
