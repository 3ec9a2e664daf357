# The memory bucket, unless create_bucket = false makes bucket_name an existing one (then nothing here exists, and the operator
# keeps that bucket as this file sets its own: README.md, "Bring your own bucket and key"; the output
# bucket_policy_statements holds the policy below). Objects are already encrypted on the client (AES-256-GCM under per-user data
# keys wrapped by the KMS key); SSE-KMS with the same key is a second layer, and the bucket is
# locked down so that nothing but TLS requests from principals granted by IAM reach it.

resource "aws_s3_bucket" "memory" {
  #checkov:skip=CKV_AWS_144:Cross-region replication is a disaster-recovery decision for the caller (it needs a second bucket and key in another region); versioning plus KMS protect against loss in-region.
  #checkov:skip=CKV2_AWS_62:Nothing consumes bucket events; s3memory reads and writes objects synchronously.
  #checkov:skip=CKV_AWS_18:Server access logging is opt-in through var.access_log_bucket because the target bucket is organisation-specific (aws_s3_bucket_logging.memory).
  count = var.create_bucket ? 1 : 0

  bucket        = var.bucket_name
  force_destroy = var.force_destroy
  tags          = local.tags
}

resource "aws_s3_bucket_ownership_controls" "memory" {
  count = var.create_bucket ? 1 : 0

  bucket = aws_s3_bucket.memory[0].id

  rule {
    object_ownership = "BucketOwnerEnforced"
  }
}

resource "aws_s3_bucket_public_access_block" "memory" {
  count = var.create_bucket ? 1 : 0

  bucket = aws_s3_bucket.memory[0].id

  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}

resource "aws_s3_bucket_versioning" "memory" {
  count = var.create_bucket ? 1 : 0

  bucket = aws_s3_bucket.memory[0].id

  versioning_configuration {
    status = "Enabled"
  }
}

resource "aws_s3_bucket_server_side_encryption_configuration" "memory" {
  count = var.create_bucket ? 1 : 0

  bucket = aws_s3_bucket.memory[0].id

  rule {
    apply_server_side_encryption_by_default {
      sse_algorithm     = "aws:kms"
      kms_master_key_id = local.kms_key_arn
    }
    # S3 asks KMS for a bucket-level key instead of one data key per object: fewer KMS calls, and
    # the encryption context of those calls is the bucket ARN (see the key policy in kms.tf).
    bucket_key_enabled = true
  }
}

resource "aws_s3_bucket_lifecycle_configuration" "memory" {
  count = var.create_bucket ? 1 : 0

  bucket = aws_s3_bucket.memory[0].id

  rule {
    id     = "expire-noncurrent-versions"
    status = "Enabled"

    filter {}

    noncurrent_version_expiration {
      noncurrent_days = var.noncurrent_version_expiration_days
    }

    # Once the noncurrent versions under a delete marker are gone, drop the marker too.
    expiration {
      expired_object_delete_marker = true
    }
  }

  rule {
    id     = "abort-incomplete-multipart-uploads"
    status = "Enabled"

    filter {}

    abort_incomplete_multipart_upload {
      days_after_initiation = var.abort_incomplete_multipart_upload_days
    }
  }

  # No rule expires current objects: a filter cannot skip a user's wrapped data key
  # (<prefix><user>/internal/keys/v<n>, written once), and expiring it would make all of that
  # user's memory unreadable. Idle expiry is the expiry function's job (var.expiry_idle_days).

  # Lifecycle rules on noncurrent versions need versioning to be configured first.
  depends_on = [aws_s3_bucket_versioning.memory]
}

resource "aws_s3_bucket_logging" "memory" {
  count = var.create_bucket && var.access_log_bucket != null ? 1 : 0

  bucket        = aws_s3_bucket.memory[0].id
  target_bucket = var.access_log_bucket
  target_prefix = var.access_log_prefix
}

resource "aws_s3_bucket_policy" "memory" {
  count = var.create_bucket ? 1 : 0

  bucket = aws_s3_bucket.memory[0].id
  policy = jsonencode(local.bucket_policy)

  # S3 rejects concurrent bucket-configuration calls; let the public access block settle first.
  depends_on = [aws_s3_bucket_public_access_block.memory]
}

locals {
  bucket_policy = {
    Version = "2012-10-17"
    Statement = [
      {
        Sid       = "DenyInsecureTransport"
        Effect    = "Deny"
        Principal = "*"
        Action    = "s3:*"
        Resource  = [local.bucket_arn, "${local.bucket_arn}/*"]
        Condition = { Bool = { "aws:SecureTransport" = "false" } }
      },
      {
        Sid       = "DenyOutdatedTls"
        Effect    = "Deny"
        Principal = "*"
        Action    = "s3:*"
        Resource  = [local.bucket_arn, "${local.bucket_arn}/*"]
        Condition = { NumericLessThan = { "s3:TlsVersion" = "1.2" } }
      },
      {
        # Uploads without an SSE header get the bucket default (SSE-KMS with our key); uploads that
        # ask for another algorithm (SSE-S3) are refused.
        Sid       = "DenyNonKmsServerSideEncryption"
        Effect    = "Deny"
        Principal = "*"
        Action    = "s3:PutObject"
        Resource  = "${local.bucket_arn}/*"
        Condition = {
          StringNotEquals = { "s3:x-amz-server-side-encryption" = ["aws:kms", "aws:kms:dsse"] }
          Null            = { "s3:x-amz-server-side-encryption" = "false" }
        }
      },
      {
        # Customer-provided keys (SSE-C) would bypass the KMS key and its audit trail.
        Sid       = "DenyCustomerProvidedKeys"
        Effect    = "Deny"
        Principal = "*"
        Action    = "s3:PutObject"
        Resource  = "${local.bucket_arn}/*"
        Condition = { Null = { "s3:x-amz-server-side-encryption-customer-algorithm" = "false" } }
      },
    ]
  }
}
