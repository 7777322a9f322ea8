"""Context values are validated before anything is synthesized."""

from __future__ import annotations

import pytest

from infra.settings import DeploySettings, SettingsError


def settings(**context):
    return DeploySettings.from_context(context.get)


def test_defaults_deploy_nessie_and_no_warm_capacity():
    result = settings()
    assert result.nessie_endpoint is None
    assert result.emr_pre_initialized is None
    assert result.emr_release_label == "emr-7.12.0"
    assert result.destroy_data_on_delete is False
    assert result.create_tables_from_uploads is False  # an unknown table is refused
    assert result.gc_delete is False  # the maintenance run only reports
    assert result.emr_idle_stop_minutes == 15  # EMR Serverless' own default
    assert result.emr_prices is None  # the price table's, for the region


def test_emr_start_up_and_price_settings_are_parsed():
    result = settings(emrIdleStopMinutes="5", emrPrices="vcpu=0.06,memory=0.0066,storage=0")
    assert result.emr_idle_stop_minutes == 5
    assert result.emr_prices == "vcpu=0.06,memory=0.0066,storage=0"


def test_context_values_are_parsed():
    result = settings(
        nessieEndpoint="http://nessie.internal:19120/",
        slackChannel="C0123ABCD9",
        emrPreInitializedExecutors="3",
        destroyDataOnDelete="true",
        nessieUiAllowedCidr="10.20.0.0/16",
        emrReleaseLabel="emr-7.13.1",
        createTablesFromUploads="true",
        gcDelete="true",
    )
    assert result.nessie_endpoint == "http://nessie.internal:19120"
    assert result.emr_pre_initialized.executors == 3
    assert result.emr_pre_initialized.drivers == 1
    assert result.destroy_data_on_delete is True
    assert result.emr_release_label == "emr-7.13.1"
    assert result.create_tables_from_uploads is True
    assert result.gc_delete is True


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ({"slackChannel": "data alerts"}, "slackChannel"),
        ({"nessieEndpoint": "nessie:19120"}, "nessieEndpoint"),
        ({"nessieEndpoint": "http://nessie:19120/api/v2"}, "without /api"),
        ({"nessieUiAllowedCidr": "0.0.0.0/0"}, "everyone"),
        ({"nessieUiUrl": "localhost:19120"}, "nessieUiUrl"),
        ({"nessieUiAllowedCidr": "10.0.0.1/16"}, "nessieUiAllowedCidr"),
        ({"emrReleaseLabel": "emr-7.11.0"}, "emr-7.12.0 or later"),
        ({"emrReleaseLabel": "emr-latest"}, "emrReleaseLabel"),
        ({"emrPreInitializedExecutors": "many"}, "integer"),
        ({"emrPreInitializedExecutors": "500"}, "between"),
        ({"destroyDataOnDelete": "maybe"}, "true or false"),
        ({"createTablesFromUploads": "sometimes"}, "createTablesFromUploads"),
        ({"gcDelete": "soon"}, "gcDelete"),
        ({"emrIdleStopMinutes": "0"}, "emrIdleStopMinutes"),  # EMR's bounds: 1 to 10080
        ({"emrIdleStopMinutes": "10081"}, "emrIdleStopMinutes"),
        ({"emrPrices": "vcpu=0.06"}, "emrPrices"),
        ({"emrPrices": "cheap"}, "emrPrices"),
        ({"stackName": "wap_ingest"}, "stackName"),
        ({"region": "europe"}, "region"),
        ({"emrMaxCpu": "lots"}, "emrMaxCpu"),
        ({"emrMaxMemory": "128"}, "emrMaxMemory"),
        ({"queueAlarmMinutes": "9"}, "queueAlarmMinutes"),  # shorter than two sweeps
        ({"blockedStartMinutes": "0"}, "blockedStartMinutes"),
    ],
)
def test_bad_context_values_are_refused_with_the_key_named(context, message):
    with pytest.raises(SettingsError, match=message):
        settings(**context)


def test_a_stack_name_is_refused_when_a_name_derived_from_it_would_be_too_long():
    from infra import names

    longest = "W" + "a" * 57  # 58: "-spark" makes the EMR application's 64
    assert settings(stackName=longest).stack_name == longest
    assert len(names.EMR_APPLICATION.of(longest)) == 64
    with pytest.raises(SettingsError, match=r"at most 58.*EMR Serverless application"):
        settings(stackName=longest + "b")
    for derived in names.DERIVED:
        assert len(derived.of(longest)) <= derived.limit, derived.what


def test_the_synth_warns_once_when_the_regions_loads_will_have_no_price(
    synthesized, synthesized_external_nessie
):
    """eu-west-1 (the default region) has no list prices in contracts/pricing.py: the deploy
    says so once; with `emrPrices` set it has nothing to say."""
    from contracts.pricing import EMR_SERVERLESS_PRICES

    assert synthesized.region not in EMR_SERVERLESS_PRICES

    def price_warnings(synth):
        return [m for _, m in synth.annotations("warning") if "emrPrices" in m]

    (warning,) = price_warnings(synthesized)
    assert synthesized.region in warning and "unknown" in warning
    assert price_warnings(synthesized_external_nessie) == []
