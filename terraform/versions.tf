terraform {
  # 1.6 brings `terraform test`; the module itself needs nothing newer.
  required_version = ">= 1.6"

  required_providers {
    aws = {
      source = "hashicorp/aws"
      # Provider 5 and 6. Tested with 5.100.0 (the last 5.x, the only version these test machines
      # install); nothing here uses what provider 6 removed or renamed, and the region is read without
      # naming an attribute that either major lacks or deprecates (data.tf). 5.100 is the floor: the
      # module needs arguments of late 5.x releases (lambda logging_config, python3.13), and nothing
      # older is tested. README.md, "Provider versions".
      version = ">= 5.100, < 7.0"
    }
  }
}
