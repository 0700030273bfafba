# The default deployment: three workers over three zones in one region, with
# the alerts e-mailing the receivers given.
# From this directory: `terraform init && terraform apply -var location=eastus
# -var 'alert_email_receivers=["oncall@example.com"]'`
# (`make deploy` does the same from infra/ in two stages, pushing the image).

module "blobleader" {
  source = "../.."

  location     = var.location
  image_digest = var.image_digest
  alerts       = { email_receivers = var.alert_email_receivers }
}
