output "resource_group_name" {
  description = "Resource group holding the deployment."
  value       = module.blobleader.resource_group_name
}

output "container_group_names" {
  description = "Worker container group names."
  value       = module.blobleader.container_group_names
}

output "registry_login_server" {
  description = "Registry to push the worker image to."
  value       = module.blobleader.registry_login_server
}
