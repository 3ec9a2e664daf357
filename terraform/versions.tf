terraform {
  # 1.6 brings `terraform test`; the module itself needs nothing newer.
  required_version = ">= 1.6"

  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = "~> 5.0"
    }
  }
}
