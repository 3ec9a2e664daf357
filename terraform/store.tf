# The storage format and the store identity (docs/format-v2.md).
#
# Format 2 binds every object and every wrapped data key to the store identity: the first 32 hex
# digits of SHA-256("s3memory/v2/store" | u32 len(id) | id | u32 len(prefix) | prefix), lengths in
# UTF-8 bytes, big-endian (s3memory/formats/store_keys.py, store_identity), where id is store_id (default:
# the bucket's name) and prefix is memory_prefix. Its KMS requests carry the encryption context
# {"s3memory:store": <identity>, "s3memory:user": <namespace token>, "store-key" or "server-record",
# "s3memory:key_version": "<n>"}, so on format 2 the key policy and the roles' policies require
# kms:EncryptionContext:s3memory:store to equal this store's identity (kms.tf, iam.tf).
#
# Terraform has no byte strings: sha256() hashes the UTF-8 encoding of a (Unicode, NFC-normalised)
# string. The identity is still computed exactly when every byte of the framing is below 0x80: each
# such byte is one character (range(128), from JSON escapes), and the NUL bytes of the lengths are
# plain characters too. So it is pinned when
#   - each of the two lengths has only bytes below 0x80 (id and prefix shorter than 128 bytes, which
#     a bucket's name, at most 63, always is; or 256-383 bytes, ...): a byte of 0x80 or more cannot
#     stand alone in UTF-8;
#   - store_id does not begin with a combining mark: Terraform normalises every string to NFC, and
#     a length byte that is a letter (0x41-0x7a) would compose with it (e.g. "e" + U+0301).
# NFC normalisation of store_id itself is harmless: the functions receive the same normalised value.
# Otherwise (a long or odd store_id, or a prefix of 128-255 bytes) the policies only require the
# context key s3memory:store to be present (Null = false), and the check below warns.
#
# A store moving from format 1 (migrating_from_format_1) also needs the format-1 context, without
# s3memory:store: each key user and the expiry role get Decrypt, only, under it (statements
# "...Format1Migration").
# tests/deploy/test_terraform.py compares this computation with store_identity over a set of ids.

locals {
  store_id = var.store_id == "" ? var.bucket_name : var.store_id

  # The environment that tells the functions the format and the store. S3MEMORY_STORAGE_FORMAT
  # always, on format 1 too: the functions' own default is "auto" (format 2 for a store with nothing
  # below the prefix yet), while the KMS grants here are pinned to var.storage_format, so the format
  # the functions serve must be exactly the one the grants were written for. S3MEMORY_STORE_ID on
  # format 2 always, spelled out even when it is the bucket's name, so that the id the functions hash
  # is visibly the one pinned here; on format 1 only when store_id is set (format 1 does not use it).
  store_environment = merge(
    { S3MEMORY_STORAGE_FORMAT = format("%d", var.storage_format) },
    var.storage_format == 1 && var.store_id == "" ? {} : { S3MEMORY_STORE_ID = local.store_id },
  )

  _identity_parts = [local.store_id, var.memory_prefix]
  # UTF-8 byte lengths (length() counts characters): from the length of the base64 encoding.
  _identity_part_bytes = [
    for part in local._identity_parts :
    length(base64encode(part)) / 4 * 3 - length(regexall("=", base64encode(part)))
  ]
  _identity_length_bytes = [
    for size in local._identity_part_bytes : [for unit in [16777216, 65536, 256, 1] : floor(size / unit) % 256]
  ]
  _ascii = [for code in range(128) : jsondecode(format("\"\\u%04x\"", code))]

  store_identity_computable = (
    alltrue([for byte in flatten(local._identity_length_bytes) : byte < 128]) &&
    !can(regex("^\\p{M}", local.store_id))
  )

  store_identity = local.store_identity_computable ? substr(sha256(join("", concat(
    ["s3memory/v2/store"],
    flatten([
      for index, part in local._identity_parts :
      [join("", [for byte in local._identity_length_bytes[index] : local._ascii[min(byte, 127)]]), part]
    ]),
  ))), 0, 32) : null

  # The condition of every grant of s3memory's envelope keys (key policy and role policies). Format
  # 1: the request carries s3memory:user (unchanged). Format 2: also this store's identity, or, when
  # Terraform cannot compute it, at least the s3memory:store key.
  encryption_context_store_key = "kms:EncryptionContext:s3memory:store"
  envelope_key_condition = {
    format1 = {
      Null = { (local.encryption_context_user_key) = "false" }
    }
    pinned = {
      Null         = { (local.encryption_context_user_key) = "false" }
      StringEquals = { (local.encryption_context_store_key) = local.store_identity }
    }
    present = {
      Null = {
        (local.encryption_context_user_key)  = "false"
        (local.encryption_context_store_key) = "false"
      }
    }
  }[var.storage_format == 1 ? "format1" : local.store_identity_computable ? "pinned" : "present"]

  # Format 2 while format-1 users are moved (var.migrating_from_format_1): reading a format-1 user's
  # files unwraps their format-1 data keys, whose context names the user and no store. Decrypt only,
  # with exactly that context; the grants above stay as they are.
  format_1_migration = var.storage_format == 2 && var.migrating_from_format_1
  format_1_decrypt_condition = {
    Null = {
      (local.encryption_context_user_key)  = "false"
      (local.encryption_context_store_key) = "true"
    }
  }
}

check "store_identity_pinned" {
  assert {
    condition     = var.storage_format == 1 || local.store_identity_computable
    error_message = "storage_format = 2: Terraform cannot compute the store identity of store_id \"${local.store_id}\" at memory_prefix \"${var.memory_prefix}\" exactly (store_id or memory_prefix 128-255, 384-511, 640-767 or 896-1023 bytes long, or a store_id beginning with a combining mark), so the KMS policies require only that requests name a store (s3memory:store), not this store's identity. A store_id shorter than 128 bytes pins it."
  }
}
