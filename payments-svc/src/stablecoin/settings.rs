//! Settings of the stablecoin rail (`PAYMENTS_CHAIN_*`). The rail is offered only when both RPC
//! providers and the treasury address are configured; there is no setting for a key because the
//! service never holds one (the treasury is a self-custodied address of the lab, known by its
//! public address only).

use crate::chain::ChainAddress;
use platform::config::env_var;
use std::time::Duration;

/// USDC on Ethereum mainnet, the default token.
pub const USDC_MAINNET: &str = "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48";
/// USDT on Ethereum mainnet (optional; see docs/stablecoin.md for its caveats).
pub const USDT_MAINNET: &str = "0xdAC17F958D2ee523a2206206994597C13D831ec7";

/// One RPC provider: a name for proofs and logs, and its URL (which may carry an API key and is
/// never logged).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProviderSetting {
    pub name: String,
    pub url: String,
}

/// Settings of the stablecoin rail.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StablecoinSettings {
    /// The chain id both providers must serve (1 = Ethereum mainnet).
    pub chain_id: u64,
    /// The ERC-20 contract (six decimals).
    pub token: ChainAddress,
    /// The lab's treasury address that receives transfers.
    pub treasury: ChainAddress,
    /// Two independent providers; both must agree before anything is recorded.
    pub providers: [ProviderSetting; 2],
    /// How long a payment request stays payable (15 minutes, like the quote).
    pub request_ttl: Duration,
    /// How long after expiry a request keeps its reference, so a late transfer is recognised as
    /// late instead of matching a newer request.
    pub late_window: Duration,
    /// Pause between scanner passes.
    pub scan_interval: Duration,
    /// Where the scanner starts on a fresh database (the deployment's first block of interest).
    pub start_block: u64,
    /// Most blocks one `eth_getLogs` call covers.
    pub max_block_range: u64,
    /// Time limit of one RPC call.
    pub rpc_timeout: Duration,
}

impl StablecoinSettings {
    /// Settings for `providers` and `treasury` with the defaults (USDC on mainnet, 15 minutes).
    pub fn new(
        chain_id: u64,
        token: ChainAddress,
        treasury: ChainAddress,
        providers: [ProviderSetting; 2],
    ) -> Self {
        Self {
            chain_id,
            token,
            treasury,
            providers,
            request_ttl: Duration::from_secs(15 * 60),
            late_window: Duration::from_secs(7 * 24 * 3600),
            scan_interval: Duration::from_secs(12),
            start_block: 0,
            max_block_range: 2_000,
            rpc_timeout: Duration::from_secs(10),
        }
    }

    /// Reads `PAYMENTS_CHAIN_*`; `None` when the rail is not configured (no provider URLs).
    pub fn from_env(prefix: &str) -> anyhow::Result<Option<Self>> {
        let var = |name: &str| env_var(&format!("{prefix}_CHAIN_{name}"));
        let (Some(url_a), Some(url_b)) = (var("RPC_URL_A"), var("RPC_URL_B")) else {
            return Ok(None);
        };
        let address = |name: &str, default: Option<&str>| -> anyhow::Result<ChainAddress> {
            let value = var(name)
                .or(default.map(str::to_owned))
                .ok_or_else(|| anyhow::anyhow!("{prefix}_CHAIN_{name} is required with the RPC URLs"))?;
            ChainAddress::parse_checksummed(&value, name)
                .map_err(|error| anyhow::anyhow!("{prefix}_CHAIN_{name}: {}", error.message))
        };
        let number = |name: &str| -> anyhow::Result<Option<u64>> {
            var(name)
                .map(|value| {
                    value
                        .trim()
                        .parse::<u64>()
                        .map_err(|_| anyhow::anyhow!("{prefix}_CHAIN_{name} must be a non-negative integer"))
                })
                .transpose()
        };
        let providers = [
            ProviderSetting {
                name: var("RPC_NAME_A").unwrap_or_else(|| "provider-a".to_owned()),
                url: url_a,
            },
            ProviderSetting {
                name: var("RPC_NAME_B").unwrap_or_else(|| "provider-b".to_owned()),
                url: url_b,
            },
        ];
        anyhow::ensure!(
            providers[0].url != providers[1].url,
            "{prefix}_CHAIN_RPC_URL_A and _B must be two independent providers"
        );
        let mut settings = Self::new(
            number("ID")?.unwrap_or(1),
            address("TOKEN_ADDRESS", Some(USDC_MAINNET))?,
            address("TREASURY_ADDRESS", None)?,
            providers,
        );
        if let Some(seconds) = number("REQUEST_TTL_SECS")? {
            settings.request_ttl = Duration::from_secs(seconds.max(1));
        }
        if let Some(millis) = number("SCAN_INTERVAL_MS")? {
            settings.scan_interval = Duration::from_millis(millis.max(10));
        }
        if let Some(block) = number("START_BLOCK")? {
            settings.start_block = block;
        }
        if let Some(range) = number("MAX_BLOCK_RANGE")? {
            settings.max_block_range = range.clamp(1, 100_000);
        }
        Ok(Some(settings))
    }
}
