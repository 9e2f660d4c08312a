package loadtest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"

	"trove.dev/trove/internal/modules"
)

// moduleTopic is what a seeded module is about: its description, README
// and resources are made from it, so that module pages read like those
// of a real registry and search finds modules by the words people type.
type moduleTopic struct {
	key       string   // a short word for it: "vpc", "eks"
	title     string   // "VPC"
	summary   string   // completes "Terraform module which creates ..."
	resources []string // resource types it declares
	features  []string
}

var moduleTopics = []moduleTopic{
	{"vpc", "VPC", "a VPC with public and private subnets, NAT gateways and flow logs", []string{"aws_vpc", "aws_subnet", "aws_nat_gateway", "aws_route_table", "aws_flow_log"}, []string{"IPv6 dual-stack subnets", "one NAT gateway per availability zone", "VPC flow logs to CloudWatch or S3", "database and cache subnet groups"}},
	{"eks", "EKS", "an EKS Kubernetes cluster with managed node groups and IRSA", []string{"aws_eks_cluster", "aws_eks_node_group", "aws_iam_role", "aws_iam_openid_connect_provider"}, []string{"managed node groups with launch templates", "IAM roles for service accounts", "cluster add-ons (CoreDNS, kube-proxy, VPC CNI)", "control plane logging"}},
	{"s3", "S3 bucket", "an S3 bucket with versioning, encryption, lifecycle rules and replication", []string{"aws_s3_bucket", "aws_s3_bucket_versioning", "aws_s3_bucket_policy", "aws_s3_bucket_lifecycle_configuration"}, []string{"server-side encryption with KMS", "lifecycle rules and transitions", "cross-region replication", "public access block"}},
	{"rds", "RDS", "an RDS PostgreSQL or MySQL database with parameter groups and backups", []string{"aws_db_instance", "aws_db_subnet_group", "aws_db_parameter_group", "aws_db_option_group"}, []string{"multi-AZ deployments", "automated backups and snapshots", "Performance Insights", "IAM database authentication"}},
	{"iam", "IAM", "IAM roles, policies and instance profiles with least-privilege defaults", []string{"aws_iam_role", "aws_iam_policy", "aws_iam_role_policy_attachment", "aws_iam_instance_profile"}, []string{"assumable roles with MFA", "OIDC trust for CI systems", "permission boundaries", "managed policy attachments"}},
	{"lambda", "Lambda", "a Lambda function with its IAM role, log group and event triggers", []string{"aws_lambda_function", "aws_iam_role", "aws_cloudwatch_log_group", "aws_lambda_permission"}, []string{"container image or zip packages", "provisioned concurrency", "dead letter queues", "VPC access"}},
	{"alb", "Application Load Balancer", "an application load balancer with listeners, target groups and TLS", []string{"aws_lb", "aws_lb_listener", "aws_lb_target_group", "aws_lb_listener_rule"}, []string{"HTTPS listeners with ACM certificates", "path and host based routing", "access logs to S3", "weighted target groups"}},
	{"cloudfront", "CloudFront", "a CloudFront distribution with origins, cache behaviours and a WAF", []string{"aws_cloudfront_distribution", "aws_cloudfront_origin_access_control", "aws_cloudfront_cache_policy"}, []string{"S3 and custom origins", "origin access control", "cache and origin request policies", "Lambda@Edge associations"}},
	{"route53", "Route 53", "Route 53 hosted zones and DNS records", []string{"aws_route53_zone", "aws_route53_record", "aws_route53_health_check"}, []string{"public and private zones", "alias records", "health checks and failover routing", "DNSSEC signing"}},
	{"ecs", "ECS", "an ECS cluster and Fargate service with autoscaling", []string{"aws_ecs_cluster", "aws_ecs_service", "aws_ecs_task_definition", "aws_appautoscaling_policy"}, []string{"Fargate and Fargate Spot capacity providers", "service discovery", "autoscaling on CPU and memory", "ECS Exec"}},
	{"sqs", "SQS", "SQS queues with dead letter queues and encryption", []string{"aws_sqs_queue", "aws_sqs_queue_policy", "aws_sqs_queue_redrive_policy"}, []string{"FIFO queues", "dead letter queues", "server-side encryption", "queue policies"}},
	{"sns", "SNS", "SNS topics with subscriptions and delivery policies", []string{"aws_sns_topic", "aws_sns_topic_subscription", "aws_sns_topic_policy"}, []string{"FIFO topics", "email, SQS and Lambda subscriptions", "delivery retry policies", "encryption with KMS"}},
	{"dynamodb", "DynamoDB", "a DynamoDB table with indexes, autoscaling and point-in-time recovery", []string{"aws_dynamodb_table", "aws_appautoscaling_target", "aws_appautoscaling_policy"}, []string{"global and local secondary indexes", "on-demand or provisioned capacity", "global tables", "point-in-time recovery"}},
	{"redis", "ElastiCache Redis", "an ElastiCache Redis replication group with encryption and failover", []string{"aws_elasticache_replication_group", "aws_elasticache_subnet_group", "aws_elasticache_parameter_group"}, []string{"cluster mode", "automatic failover", "encryption in transit and at rest", "snapshots"}},
	{"kms", "KMS", "KMS keys with aliases, grants and key policies", []string{"aws_kms_key", "aws_kms_alias", "aws_kms_grant"}, []string{"multi-region keys", "key rotation", "grants for services", "key policies"}},
	{"security-group", "Security Group", "security groups with named ingress and egress rules", []string{"aws_security_group", "aws_vpc_security_group_ingress_rule", "aws_vpc_security_group_egress_rule"}, []string{"named rules for common services", "computed rules", "IPv6 rules", "prefix lists"}},
	{"autoscaling", "Auto Scaling", "an EC2 Auto Scaling group with a launch template and scaling policies", []string{"aws_autoscaling_group", "aws_launch_template", "aws_autoscaling_policy"}, []string{"mixed instances policies", "instance refresh", "warm pools", "lifecycle hooks"}},
	{"acm", "ACM", "ACM certificates validated through Route 53 DNS", []string{"aws_acm_certificate", "aws_acm_certificate_validation", "aws_route53_record"}, []string{"DNS validation", "subject alternative names", "wildcard certificates", "certificate transparency logging"}},
	{"cloudwatch", "CloudWatch", "CloudWatch alarms, dashboards and log metric filters", []string{"aws_cloudwatch_metric_alarm", "aws_cloudwatch_dashboard", "aws_cloudwatch_log_metric_filter"}, []string{"composite alarms", "anomaly detection", "log metric filters", "dashboards as code"}},
	{"waf", "WAF", "a WAFv2 web ACL with managed rule groups and rate limits", []string{"aws_wafv2_web_acl", "aws_wafv2_web_acl_association", "aws_wafv2_ip_set"}, []string{"AWS managed rule groups", "rate-based rules", "IP sets", "logging to Kinesis Firehose"}},
	{"transit-gateway", "Transit Gateway", "a transit gateway with VPC attachments and route tables", []string{"aws_ec2_transit_gateway", "aws_ec2_transit_gateway_vpc_attachment", "aws_ec2_transit_gateway_route_table"}, []string{"cross-account sharing with RAM", "VPC attachments", "route table propagation", "appliance mode"}},
	{"secrets", "Secrets Manager", "Secrets Manager secrets with rotation and resource policies", []string{"aws_secretsmanager_secret", "aws_secretsmanager_secret_version", "aws_secretsmanager_secret_rotation"}, []string{"automatic rotation with Lambda", "replica secrets", "resource policies", "random initial values"}},
	{"ecr", "ECR", "ECR repositories with lifecycle policies and replication", []string{"aws_ecr_repository", "aws_ecr_lifecycle_policy", "aws_ecr_repository_policy"}, []string{"image scanning on push", "lifecycle policies", "cross-region replication", "immutable tags"}},
	{"vpn", "Site-to-Site VPN", "a site-to-site VPN connection with customer gateways", []string{"aws_vpn_gateway", "aws_customer_gateway", "aws_vpn_connection"}, []string{"static and BGP routing", "tunnel options", "CloudWatch tunnel alarms", "transit gateway attachment"}},
}

// topicOf returns the topic of the i-th module of a spec.
func topicOf(i int) moduleTopic { return moduleTopics[i%len(moduleTopics)] }

// moduleDescription is the description of the i-th module of a spec.
func moduleDescription(i int) string {
	return "Terraform module which creates " + topicOf(i).summary + " on AWS"
}

// inputTemplates are the variables seeded modules draw their inputs
// from; "%s" stands for the topic's key with "_" for "-".
var inputTemplates = []modules.Input{
	{Name: "name", Type: "string", Description: "Name of the %s resources, used as a prefix of every resource name.", Required: true},
	{Name: "create", Type: "bool", Description: "Whether to create any resource of this module (use it to disable the module conditionally).", Default: json.RawMessage(`true`)},
	{Name: "tags", Type: "map(string)", Description: "Tags added to every resource.", Default: json.RawMessage(`{}`)},
	{Name: "environment", Type: "string", Description: "Environment the %s belongs to (dev, staging, prod).", Required: true},
	{Name: "vpc_id", Type: "string", Description: "ID of the VPC where the %s resources are created.", Required: true},
	{Name: "subnet_ids", Type: "list(string)", Description: "Subnets the %s is placed in; at least two availability zones are recommended.", Required: true},
	{Name: "kms_key_arn", Type: "string", Description: "ARN of the KMS key that encrypts the %s data; the AWS managed key when null.", Default: json.RawMessage(`null`)},
	{Name: "enable_logging", Type: "bool", Description: "Whether to send the %s logs to CloudWatch Logs.", Default: json.RawMessage(`true`)},
	{Name: "log_retention_days", Type: "number", Description: "Days the log group keeps events.", Default: json.RawMessage(`30`)},
	{Name: "instance_type", Type: "string", Description: "EC2 instance type of the nodes.", Default: json.RawMessage(`"t3.medium"`)},
	{Name: "min_size", Type: "number", Description: "Minimum number of instances.", Default: json.RawMessage(`1`)},
	{Name: "max_size", Type: "number", Description: "Maximum number of instances.", Default: json.RawMessage(`3`)},
	{Name: "allowed_cidr_blocks", Type: "list(string)", Description: "CIDR blocks allowed to reach the %s.", Default: json.RawMessage(`[]`)},
	{Name: "allowed_security_group_ids", Type: "list(string)", Description: "Security groups allowed to reach the %s.", Default: json.RawMessage(`[]`)},
	{Name: "deletion_protection", Type: "bool", Description: "Whether the %s is protected against deletion.", Default: json.RawMessage(`false`)},
	{Name: "backup_retention_period", Type: "number", Description: "Days automated backups are kept.", Default: json.RawMessage(`7`)},
	{Name: "maintenance_window", Type: "string", Description: "Weekly maintenance window, in UTC (ddd:hh24:mi-ddd:hh24:mi).", Default: json.RawMessage(`"sun:03:00-sun:04:00"`)},
	{Name: "iam_role_arn", Type: "string", Description: "Existing IAM role to use instead of creating one.", Default: json.RawMessage(`null`)},
	{Name: "iam_role_permissions_boundary", Type: "string", Description: "ARN of the policy that is the permissions boundary of the created role.", Default: json.RawMessage(`null`)},
	{Name: "%s_settings", Type: "object({\n    enabled = bool\n    mode    = optional(string, \"standard\")\n    limits  = optional(map(number), {})\n  })", Description: "Advanced settings of the %s; see the provider documentation for every field.", Default: json.RawMessage(`{"enabled":true,"mode":"standard","limits":{}}`)},
	{Name: "%s_rules", Type: "list(object({\n    name     = string\n    priority = number\n    action   = string\n  }))", Description: "Rules of the %s, evaluated in order of priority.", Default: json.RawMessage(`[{"action":"allow","name":"default","priority":100}]`)},
	{Name: "availability_zones", Type: "list(string)", Description: "Availability zones to spread the %s over.", Default: json.RawMessage(`["eu-west-1a","eu-west-1b","eu-west-1c"]`)},
	{Name: "create_iam_role", Type: "bool", Description: "Whether to create the IAM role of the %s.", Default: json.RawMessage(`true`)},
	{Name: "alarm_sns_topic_arn", Type: "string", Description: "SNS topic that receives the alarms of the %s.", Default: json.RawMessage(`null`)},
	{Name: "master_password", Type: "string", Description: "Password of the administrator; generated and stored in Secrets Manager when null.", Default: json.RawMessage(`null`), Sensitive: true},
	{Name: "port", Type: "number", Description: "Port the %s listens on.", Default: json.RawMessage(`443`)},
	{Name: "timeouts", Type: "map(string)", Description: "Create, update and delete timeouts of the %s.", Default: json.RawMessage(`{"create":"40m","delete":"40m","update":"80m"}`)},
	{Name: "create_security_group", Type: "bool", Description: "Whether to create a security group for the %s.", Default: json.RawMessage(`true`)},
	{Name: "region", Type: "string", Description: "Region to create the %s in; the provider's region when null.", Default: json.RawMessage(`null`)},
	{Name: "description", Type: "string", Description: "Description of the %s.", Default: json.RawMessage(`"Managed by Terraform"`)},
	{Name: "additional_policies", Type: "map(string)", Description: "Additional IAM policies to attach, by name.", Default: json.RawMessage(`{}`)},
	{Name: "cidr_block", Type: "string", Description: "IPv4 CIDR block of the %s.", Default: json.RawMessage(`"10.0.0.0/16"`)},
}

var outputTemplates = []modules.Output{
	{Name: "id", Description: "ID of the %s."},
	{Name: "arn", Description: "ARN of the %s."},
	{Name: "name", Description: "Name of the %s."},
	{Name: "security_group_id", Description: "ID of the security group of the %s."},
	{Name: "iam_role_arn", Description: "ARN of the IAM role the module created."},
	{Name: "endpoint", Description: "Endpoint clients use to reach the %s."},
	{Name: "log_group_name", Description: "Name of the CloudWatch log group."},
	{Name: "connection_secret", Description: "Connection details of the %s.", Sensitive: true},
}

var submoduleNames = []string{"iam", "monitoring", "logging", "networking", "backup", "dns"}

// moduleMetadata returns the metadata JSON of the i-th module of a spec,
// shaped like what modules.Inspect extracts from a real module: a README
// of 3 to 8 KB of Markdown, 5 to 30 inputs, a few outputs, provider
// requirements, resources, up to 3 submodules and an example or two. It
// is the same for every version of the module and the same in every run.
func moduleMetadata(namespace string, m ModuleSpec, i int) []byte {
	t := topicOf(i)
	rng := rand.New(rand.NewPCG(uint64(i), 0x7472))
	md := modules.Metadata{Submodules: []modules.ModuleInfo{}, Examples: []modules.ModuleInfo{}}
	md.Root = moduleInfo(rng, t, "", "", 5+rng.IntN(26), 2+rng.IntN(6))
	md.Root.RequiredCore = []string{">= 1.3"}
	source := namespace + "/" + m.Name + "/" + m.System
	md.Root.Readme = moduleReadme(rng, t, source, md.Root, 3<<10+rng.IntN(5<<10))
	subs := rng.Perm(len(submoduleNames))[:rng.IntN(4)]
	for _, s := range subs {
		name := submoduleNames[s]
		sub := moduleInfo(rng, t, "modules/"+name, name, 3+rng.IntN(5), 1+rng.IntN(3))
		sub.Readme = "# " + t.title + " " + name + "\n\nCreates the " + name + " resources of the " + t.title + " module on their own, " +
			"for configurations that manage the " + t.key + " elsewhere.\n\n## Usage\n\n```hcl\nmodule \"" + strings.ReplaceAll(name, "-", "_") +
			"\" {\n  source = \"" + source + "//modules/" + name + "\"\n\n  name = \"example\"\n}\n```\n"
		md.Submodules = append(md.Submodules, sub)
	}
	for _, ex := range []string{"complete", "simple"}[:1+rng.IntN(2)] {
		e := modules.ModuleInfo{Path: "examples/" + ex, Name: ex, Inputs: []modules.Input{}, Outputs: []modules.Output{},
			Readme: "# " + strings.ToUpper(ex[:1]) + ex[1:] + " " + t.title + " example\n\nConfiguration in this directory creates " + t.summary +
				".\n\n```bash\nterraform init\nterraform plan\nterraform apply\n```\n\nRun `terraform destroy` when you no longer need these resources.\n",
			ProviderDependencies: []modules.ProviderDependency{{Name: "aws", Source: "hashicorp/aws", Version: ">= 5.0"}},
			Dependencies:         []modules.ModuleDependency{{Name: strings.ReplaceAll(t.key, "-", "_"), Source: "../../"}},
			RequiredCore:         []string{">= 1.3"}}
		md.Examples = append(md.Examples, e)
	}
	b, err := json.Marshal(md)
	if err != nil {
		panic(err) // static types: cannot fail
	}
	return b
}

// moduleInfo draws inputs and outputs for one module directory.
func moduleInfo(rng *rand.Rand, t moduleTopic, path, name string, inputs, outputs int) modules.ModuleInfo {
	word := strings.ReplaceAll(t.key, "-", "_")
	info := modules.ModuleInfo{Path: path, Name: name, Inputs: []modules.Input{}, Outputs: []modules.Output{},
		RequiredCore: []string{}, Dependencies: []modules.ModuleDependency{}, Resources: []modules.Resource{}}
	for _, j := range rng.Perm(len(inputTemplates))[:min(inputs, len(inputTemplates))] {
		in := inputTemplates[j]
		in.Name = strings.ReplaceAll(in.Name, "%s", word)
		in.Description = strings.ReplaceAll(in.Description, "%s", t.title)
		if in.Default == nil {
			in.Default = json.RawMessage(`null`)
		}
		info.Inputs = append(info.Inputs, in)
	}
	for _, j := range rng.Perm(len(outputTemplates))[:min(outputs, len(outputTemplates))] {
		out := outputTemplates[j]
		out.Description = strings.ReplaceAll(out.Description, "%s", t.title)
		info.Outputs = append(info.Outputs, out)
	}
	info.ProviderDependencies = []modules.ProviderDependency{{Name: "aws", Source: "hashicorp/aws", Version: ">= 5.0"}}
	if rng.IntN(3) == 0 {
		info.ProviderDependencies = append(info.ProviderDependencies, modules.ProviderDependency{Name: "random", Source: "hashicorp/random", Version: ">= 3.5"})
	}
	if rng.IntN(4) == 0 {
		info.ProviderDependencies = append(info.ProviderDependencies, modules.ProviderDependency{Name: "tls", Source: "hashicorp/tls", Version: ">= 4.0"})
	}
	for k, typ := range t.resources {
		if name == "" || k%2 == 0 {
			info.Resources = append(info.Resources, modules.Resource{Name: "this", Type: typ})
		}
	}
	return info
}

// moduleReadme writes a README like those of popular public modules:
// a title and summary, features, usage and examples in code blocks,
// requirements, inputs and outputs as tables, then notes up to about
// size bytes.
func moduleReadme(rng *rand.Rand, t moduleTopic, source string, root modules.ModuleInfo, size int) string {
	var b strings.Builder
	word := strings.ReplaceAll(t.key, "-", "_")
	fmt.Fprintf(&b, "# AWS %s Terraform module\n\nTerraform module which creates %s on AWS.\n\n", t.title, t.summary)
	b.WriteString("[![Release](https://img.shields.io/badge/release-v1-blue.svg)](#) [![License](https://img.shields.io/badge/license-Apache%202.0-green.svg)](#)\n\n")
	b.WriteString("## Features\n\n")
	for _, f := range t.features {
		fmt.Fprintf(&b, "- %s\n", f)
	}
	b.WriteString("- tags on every resource, with a `tags` input merged into provider default tags\n- conditional creation (`create = false`)\n\n")
	fmt.Fprintf(&b, "## Usage\n\n```hcl\nmodule \"%s\" {\n  source  = \"%s\"\n  version = \"~> 1.0\"\n\n", word, source)
	for _, in := range root.Inputs {
		if in.Required {
			fmt.Fprintf(&b, "  %s = %s\n", in.Name, exampleValue(in))
		}
	}
	b.WriteString("\n  tags = {\n    Terraform   = \"true\"\n    Environment = \"dev\"\n  }\n}\n```\n\n")
	b.WriteString("## Conditional creation\n\nSometimes you need a way to create resources conditionally, but Terraform does not allow `count` inside a `module` block before 0.13. Set `create`:\n\n")
	fmt.Fprintf(&b, "```hcl\nmodule \"%s\" {\n  source = \"%s\"\n\n  create = false\n  # ... omitted\n}\n```\n\n", word, source)
	b.WriteString("## Examples\n\n- [Complete](#examples): every feature of the module\n- [Simple](#examples): the least configuration that works\n\n")
	b.WriteString("## Requirements\n\n| Name | Version |\n|------|---------|\n| terraform | >= 1.3 |\n")
	for _, p := range root.ProviderDependencies {
		fmt.Fprintf(&b, "| %s | %s |\n", p.Name, p.Version)
	}
	b.WriteString("\n## Resources\n\n| Name | Type |\n|------|------|\n")
	for _, r := range root.Resources {
		fmt.Fprintf(&b, "| %s.%s | resource |\n", r.Type, r.Name)
	}
	b.WriteString("\n## Inputs\n\n| Name | Description | Type | Default | Required |\n|------|-------------|------|---------|:--------:|\n")
	for _, in := range root.Inputs {
		def, req := "n/a", "yes"
		if !in.Required {
			def, req = "`"+string(in.Default)+"`", "no"
		}
		fmt.Fprintf(&b, "| %s | %s | `%s` | %s | %s |\n", in.Name, in.Description, strings.Join(strings.Fields(in.Type), " "), def, req)
	}
	b.WriteString("\n## Outputs\n\n| Name | Description |\n|------|-------------|\n")
	for _, out := range root.Outputs {
		fmt.Fprintf(&b, "| %s | %s |\n", out.Name, out.Description)
	}
	b.WriteString("\n## Notes\n\n")
	notes := []string{
		"Resources are named after `name`, so two instances of this module in one account need different names. Changing `name` later replaces most resources.",
		"The module never creates resources outside the region of its provider. Pass a provider with an alias to place them elsewhere.",
		"Upgrading from 0.x: the `" + word + "_settings` input replaced a dozen separate inputs; run `terraform plan` and move state with `moved` blocks where the plan shows replacements.",
		"Every resource is tagged with `tags`; tags set here win over the provider's `default_tags` of the same key.",
		"Deletion protection is off by default so that examples can be destroyed; turn it on for production.",
		"Costs: the " + t.title + " resources this module creates are billed by AWS; see the pricing page of each service before applying in production.",
	}
	for k := 0; b.Len() < size-200; k++ {
		fmt.Fprintf(&b, "%s\n\n", notes[(k+rng.IntN(len(notes)))%len(notes)])
	}
	b.WriteString("## License\n\nApache 2 Licensed. See [LICENSE](LICENSE) for full details.\n")
	return b.String()
}

// exampleValue is a plausible value of a required input in a usage
// example.
func exampleValue(in modules.Input) string {
	switch {
	case strings.HasPrefix(in.Type, "list"):
		return `["subnet-abcde012", "subnet-bcde012a"]`
	case in.Type == "string" && strings.HasSuffix(in.Name, "_id"):
		return `"vpc-1234556abcdef"`
	case in.Type == "string":
		return `"example"`
	}
	return "null"
}
