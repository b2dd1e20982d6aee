//! Hooks without a `Context`, returning the provider's own error, taking the backend.
use paperclip_sandbox_sdk::prelude::*;
use paperclip_sandbox_sdk::protocol::methods::Method;

struct P;

struct Api;

struct ApiError;

impl IntoProviderError for ApiError {
    fn into_provider_error(self, _: Method) -> ProviderError {
        ProviderError::worker("api")
    }
}

#[provider]
impl SandboxProvider for P {
    type Config = JsonObject;
    type Backend = Api;

    async fn connect(&self, _config: &JsonObject) -> Result<Api, ApiError> {
        Ok(Api)
    }

    async fn probe(&self, _: ProbeParams) -> Result<ProbeResult, ApiError> {
        Ok(ProbeResult::new(true))
    }

    async fn execute(&self, params: ExecuteParams, _api: &Api, cx: Context) -> Result<ExecuteResult, ApiError> {
        let _ = (params.command, cx.profile());
        Err(ApiError)
    }

    async fn health(&self, _: HealthParams) -> HookResult<HealthResult> {
        Ok(HealthResult::default())
    }

    async fn on_event(&self, _: Value) {}
}

fn main() {
    assert_eq!(P.implemented_methods(), ["environmentProbe", "environmentExecute", "health"]);
}
