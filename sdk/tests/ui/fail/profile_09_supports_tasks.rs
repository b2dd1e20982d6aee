use paperclip_sandbox_sdk::prelude::*;

#[derive(PluginManifest)]
#[plugin(id = "acme.sbx", display_name = "Acme", description = "Acme sandboxes", author = "Acme", profile = "paperclip-2026-09")]
#[driver(key = "acme", display_name = "Acme", supports_tasks = true)]
struct P;

#[provider]
impl SandboxProvider for P {
    async fn environment_task(&self, p: EnvironmentTaskParams, _: Context) -> HookResult<TaskResult> {
        Ok(TaskResult::accepted(p.task_id))
    }
}

fn main() {}
