# The default deployment: three workers over three zones in one region.
# From this directory: `terraform init && terraform apply -var location=eastus`
# (`make deploy` does the same from infra/ in two stages, pushing the image).

module "blobleader" {
  source = "../.."

  location     = var.location
  image_digest = var.image_digest
}
