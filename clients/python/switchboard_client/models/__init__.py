"""Contains all the data models used in inputs/outputs"""

from .accepted_job_body import AcceptedJobBody
from .agent_body import AgentBody
from .agent_body_analysis_type_0 import AgentBodyAnalysisType0
from .agent_body_analysis_type_0_data_schema_type_0 import AgentBodyAnalysisType0DataSchemaType0
from .agent_body_metadata import AgentBodyMetadata
from .agent_body_style_profile_type_0 import AgentBodyStyleProfileType0
from .agent_fields import AgentFields
from .agent_fields_analysis_type_0 import AgentFieldsAnalysisType0
from .agent_fields_analysis_type_0_data_schema_type_0 import AgentFieldsAnalysisType0DataSchemaType0
from .agent_fields_metadata_type_0 import AgentFieldsMetadataType0
from .agent_fields_style_profile_type_0 import AgentFieldsStyleProfileType0
from .agent_fields_transfer_type_0_item import AgentFieldsTransferType0Item
from .agent_fields_transfer_type_0_item_mode import AgentFieldsTransferType0ItemMode
from .attempt_body import AttemptBody
from .billing_webhook_body import BillingWebhookBody
from .breakdown_body import BreakdownBody
from .call_analysis import CallAnalysis
from .call_analysis_data_type_0 import CallAnalysisDataType0
from .call_answer import CallAnswer
from .call_event_body import CallEventBody
from .call_event_body_detail_type_0 import CallEventBodyDetailType0
from .campaign_body import CampaignBody
from .campaign_body_window_type_0 import CampaignBodyWindowType0
from .campaign_request import CampaignRequest
from .campaign_request_window_type_0 import CampaignRequestWindowType0
from .chat_request_body import ChatRequestBody
from .chat_response_body import ChatResponseBody
from .checkout_body import CheckoutBody
from .checkout_request import CheckoutRequest
from .collection_body import CollectionBody
from .collection_body_metadata import CollectionBodyMetadata
from .contact_body import ContactBody
from .contact_body_variables import ContactBodyVariables
from .contact_counts_body import ContactCountsBody
from .contact_request import ContactRequest
from .contact_request_variables_type_0 import ContactRequestVariablesType0
from .create_collection_request import CreateCollectionRequest
from .create_collection_request_metadata_type_0 import CreateCollectionRequestMetadataType0
from .create_key_request import CreateKeyRequest
from .create_webhook_request import CreateWebhookRequest
from .created_webhook_body import CreatedWebhookBody
from .credits_body import CreditsBody
from .delivery_body import DeliveryBody
from .delivery_body_payload import DeliveryBodyPayload
from .error_body import ErrorBody
from .error_detail import ErrorDetail
from .error_entry import ErrorEntry
from .hang_up_body import HangUpBody
from .health_body import HealthBody
from .health_body_engines import HealthBodyEngines
from .ingest_body import IngestBody
from .ingest_request import IngestRequest
from .ingest_request_metadata_type_0 import IngestRequestMetadataType0
from .instance_body import InstanceBody
from .instance_body_variables import InstanceBodyVariables
from .instance_fields import InstanceFields
from .instance_fields_variables_type_0 import InstanceFieldsVariablesType0
from .interruption_body import InterruptionBody
from .interruption_quality import InterruptionQuality
from .issue import Issue
from .issued_key_body import IssuedKeyBody
from .job_body import JobBody
from .key_body import KeyBody
from .knowledge_hit import KnowledgeHit
from .knowledge_hit_metadata_type_0 import KnowledgeHitMetadataType0
from .latency_body import LatencyBody
from .machine_detection import MachineDetection
from .metrics_body import MetricsBody
from .open_ai_model_body import OpenAiModelBody
from .open_ai_model_list import OpenAiModelList
from .outbound_body import OutboundBody
from .outbound_request import OutboundRequest
from .overage_body import OverageBody
from .page_body_agent_body import PageBodyAgentBody
from .page_body_campaign_body import PageBodyCampaignBody
from .page_body_collection_body import PageBodyCollectionBody
from .page_body_delivery_body import PageBodyDeliveryBody
from .page_body_instance_body import PageBodyInstanceBody
from .page_body_key_body import PageBodyKeyBody
from .page_body_phone_number_body import PageBodyPhoneNumberBody
from .page_body_session_summary_body import PageBodySessionSummaryBody
from .page_body_webhook_body import PageBodyWebhookBody
from .phone_number_body import PhoneNumberBody
from .phone_number_fields import PhoneNumberFields
from .plan_body import PlanBody
from .portal_body import PortalBody
from .provider_key_body import ProviderKeyBody
from .provider_key_list import ProviderKeyList
from .providers_body import ProvidersBody
from .provision_body import ProvisionBody
from .provision_collection import ProvisionCollection
from .provision_request import ProvisionRequest
from .retry_body import RetryBody
from .retry_request import RetryRequest
from .root_cause_body import RootCauseBody
from .search_body import SearchBody
from .search_request import SearchRequest
from .segment_body import SegmentBody
from .session_detail_body import SessionDetailBody
from .session_summary_body import SessionSummaryBody
from .session_token_body import SessionTokenBody
from .speak_request import SpeakRequest
from .speech_body import SpeechBody
from .speech_body_voice import SpeechBodyVoice
from .store_provider_key import StoreProviderKey
from .subscription_body import SubscriptionBody
from .sync_body import SyncBody
from .synthesize_request import SynthesizeRequest
from .task_body import TaskBody
from .token_usage_body import TokenUsageBody
from .tool_call_record import ToolCallRecord
from .tool_call_record_arguments import ToolCallRecordArguments
from .tool_execution_body import ToolExecutionBody
from .transcribe_request import TranscribeRequest
from .transcription_body import TranscriptionBody
from .transcription_form import TranscriptionForm
from .transfer_body import TransferBody
from .transfer_request import TransferRequest
from .transfer_target import TransferTarget
from .transfer_target_mode import TransferTargetMode
from .translation_form import TranslationForm
from .turn_body import TurnBody
from .twilio_session_body import TwilioSessionBody
from .twilio_session_request import TwilioSessionRequest
from .unrecognised_speech_body import UnrecognisedSpeechBody
from .usage_body import UsageBody
from .verify_body import VerifyBody
from .verify_request import VerifyRequest
from .webhook_body import WebhookBody
from .webhook_receipt_body import WebhookReceiptBody
from .word_body import WordBody

__all__ = (
    "AcceptedJobBody",
    "AgentBody",
    "AgentBodyAnalysisType0",
    "AgentBodyAnalysisType0DataSchemaType0",
    "AgentBodyMetadata",
    "AgentBodyStyleProfileType0",
    "AgentFields",
    "AgentFieldsAnalysisType0",
    "AgentFieldsAnalysisType0DataSchemaType0",
    "AgentFieldsMetadataType0",
    "AgentFieldsStyleProfileType0",
    "AgentFieldsTransferType0Item",
    "AgentFieldsTransferType0ItemMode",
    "AttemptBody",
    "BillingWebhookBody",
    "BreakdownBody",
    "CallAnalysis",
    "CallAnalysisDataType0",
    "CallAnswer",
    "CallEventBody",
    "CallEventBodyDetailType0",
    "CampaignBody",
    "CampaignBodyWindowType0",
    "CampaignRequest",
    "CampaignRequestWindowType0",
    "ChatRequestBody",
    "ChatResponseBody",
    "CheckoutBody",
    "CheckoutRequest",
    "CollectionBody",
    "CollectionBodyMetadata",
    "ContactBody",
    "ContactBodyVariables",
    "ContactCountsBody",
    "ContactRequest",
    "ContactRequestVariablesType0",
    "CreateCollectionRequest",
    "CreateCollectionRequestMetadataType0",
    "CreatedWebhookBody",
    "CreateKeyRequest",
    "CreateWebhookRequest",
    "CreditsBody",
    "DeliveryBody",
    "DeliveryBodyPayload",
    "ErrorBody",
    "ErrorDetail",
    "ErrorEntry",
    "HangUpBody",
    "HealthBody",
    "HealthBodyEngines",
    "IngestBody",
    "IngestRequest",
    "IngestRequestMetadataType0",
    "InstanceBody",
    "InstanceBodyVariables",
    "InstanceFields",
    "InstanceFieldsVariablesType0",
    "InterruptionBody",
    "InterruptionQuality",
    "Issue",
    "IssuedKeyBody",
    "JobBody",
    "KeyBody",
    "KnowledgeHit",
    "KnowledgeHitMetadataType0",
    "LatencyBody",
    "MachineDetection",
    "MetricsBody",
    "OpenAiModelBody",
    "OpenAiModelList",
    "OutboundBody",
    "OutboundRequest",
    "OverageBody",
    "PageBodyAgentBody",
    "PageBodyCampaignBody",
    "PageBodyCollectionBody",
    "PageBodyDeliveryBody",
    "PageBodyInstanceBody",
    "PageBodyKeyBody",
    "PageBodyPhoneNumberBody",
    "PageBodySessionSummaryBody",
    "PageBodyWebhookBody",
    "PhoneNumberBody",
    "PhoneNumberFields",
    "PlanBody",
    "PortalBody",
    "ProviderKeyBody",
    "ProviderKeyList",
    "ProvidersBody",
    "ProvisionBody",
    "ProvisionCollection",
    "ProvisionRequest",
    "RetryBody",
    "RetryRequest",
    "RootCauseBody",
    "SearchBody",
    "SearchRequest",
    "SegmentBody",
    "SessionDetailBody",
    "SessionSummaryBody",
    "SessionTokenBody",
    "SpeakRequest",
    "SpeechBody",
    "SpeechBodyVoice",
    "StoreProviderKey",
    "SubscriptionBody",
    "SyncBody",
    "SynthesizeRequest",
    "TaskBody",
    "TokenUsageBody",
    "ToolCallRecord",
    "ToolCallRecordArguments",
    "ToolExecutionBody",
    "TranscribeRequest",
    "TranscriptionBody",
    "TranscriptionForm",
    "TransferBody",
    "TransferRequest",
    "TransferTarget",
    "TransferTargetMode",
    "TranslationForm",
    "TurnBody",
    "TwilioSessionBody",
    "TwilioSessionRequest",
    "UnrecognisedSpeechBody",
    "UsageBody",
    "VerifyBody",
    "VerifyRequest",
    "WebhookBody",
    "WebhookReceiptBody",
    "WordBody",
)
