//! Diesel table definitions shared by both backends (see `migrations/sqlite` and
//! `migrations/postgres`, which create the same columns with each backend's types).

diesel::table! {
    developers (seq) {
        seq -> BigInt,
        id -> Text,
        name -> Nullable<Text>,
        tier -> Text,
        created_at -> BigInt,
        stripe_customer_id -> Nullable<Text>,
        stripe_subscription_id -> Nullable<Text>,
        tier_expires_at -> Nullable<BigInt>,
    }
}

diesel::table! {
    api_keys (seq) {
        seq -> BigInt,
        id -> Text,
        developer_id -> Text,
        name -> Text,
        key_hash -> Text,
        prefix -> Text,
        created_at -> BigInt,
        expires_at -> Nullable<BigInt>,
        last_used_at -> Nullable<BigInt>,
        revoked_at -> Nullable<BigInt>,
    }
}

diesel::table! {
    collections (seq) {
        seq -> BigInt,
        id -> Text,
        developer_id -> Text,
        name -> Text,
        description -> Nullable<Text>,
        metadata -> Text,
        created_at -> BigInt,
    }
}

diesel::table! {
    documents (seq) {
        seq -> BigInt,
        id -> Text,
        developer_id -> Text,
        collection_id -> Text,
        content_type -> Text,
        source_url -> Nullable<Text>,
        metadata -> Text,
        chunk_count -> Integer,
        tokens -> BigInt,
        created_at -> BigInt,
    }
}

diesel::table! {
    chunks (seq) {
        seq -> BigInt,
        document_id -> Text,
        collection_id -> Text,
        chunk_index -> Integer,
        content -> Text,
        metadata -> Text,
        embedding -> Nullable<Binary>,
    }
}

diesel::table! {
    agents (seq) {
        seq -> BigInt,
        id -> Text,
        developer_id -> Text,
        name -> Text,
        description -> Nullable<Text>,
        system_prompt -> Nullable<Text>,
        first_message -> Nullable<Text>,
        voice_id -> Text,
        tts_provider -> Text,
        tts_model -> Nullable<Text>,
        stt_provider -> Text,
        llm_provider -> Text,
        llm_model -> Nullable<Text>,
        collection_id -> Nullable<Text>,
        style_profile -> Nullable<Text>,
        language -> Text,
        temperature -> Double,
        max_tokens -> Nullable<Integer>,
        metadata -> Text,
        status -> Text,
        created_at -> BigInt,
        updated_at -> BigInt,
        transfer -> Text,
        analysis -> Nullable<Text>,
    }
}

diesel::table! {
    session_analyses (session_id) {
        session_id -> Text,
        developer_id -> Text,
        status -> Text,
        summary -> Nullable<Text>,
        success -> Nullable<Bool>,
        success_reason -> Nullable<Text>,
        data -> Nullable<Text>,
        errors -> Text,
        provider -> Nullable<Text>,
        input_tokens -> BigInt,
        output_tokens -> BigInt,
        created_at -> BigInt,
        completed_at -> Nullable<BigInt>,
    }
}

diesel::table! {
    agent_instances (seq) {
        seq -> BigInt,
        id -> Text,
        developer_id -> Text,
        agent_id -> Text,
        name -> Nullable<Text>,
        phone_number -> Nullable<Text>,
        context -> Text,
        metadata -> Text,
        created_at -> BigInt,
        updated_at -> BigInt,
    }
}

diesel::table! {
    usage_counters (developer_id, period) {
        developer_id -> Text,
        period -> Text,
        request_count -> BigInt,
        credits_tts -> Double,
        credits_stt -> Double,
        credits_llm -> Double,
        credits_rag -> Double,
        carryover -> Double,
    }
}

diesel::table! {
    stripe_events (id) {
        id -> Text,
        event_type -> Text,
        developer_id -> Nullable<Text>,
        received_at -> BigInt,
    }
}

diesel::table! {
    rate_limit_windows (key_id, window_start) {
        key_id -> Text,
        window_start -> BigInt,
        count -> BigInt,
    }
}

diesel::table! {
    provider_keys (developer_id, provider) {
        developer_id -> Text,
        provider -> Text,
        sealed_key -> Text,
        key_hint -> Text,
        created_at -> BigInt,
        last_verified_at -> Nullable<BigInt>,
    }
}

diesel::allow_tables_to_appear_in_same_query!(
    provider_keys,
    sessions,
    session_analyses,
    session_turns,
    session_tool_calls,
    session_events,
    conversations,
    conversation_messages,
    transcription_jobs,
    developers,
    api_keys,
    collections,
    documents,
    chunks,
    agents,
    agent_instances,
    usage_counters,
    stripe_events,
    rate_limit_windows,
);

diesel::table! {
    transcription_jobs (seq) {
        seq -> BigInt,
        id -> Text,
        developer_id -> Text,
        node_id -> Text,
        status -> Text,
        request -> Text,
        audio_path -> Nullable<Text>,
        result -> Nullable<Text>,
        error -> Nullable<Text>,
        created_at -> BigInt,
        completed_at -> Nullable<BigInt>,
        runs -> Integer,
    }
}

diesel::table! {
    conversations (seq) {
        seq -> BigInt,
        id -> Text,
        developer_id -> Text,
        agent_id -> Text,
        instance_id -> Nullable<Text>,
        turns -> Integer,
        ended -> Bool,
        created_at -> BigInt,
        updated_at -> BigInt,
    }
}

diesel::table! {
    conversation_messages (seq) {
        seq -> BigInt,
        conversation_id -> Text,
        turn_index -> Integer,
        role -> Text,
        content -> Text,
        tool_calls -> Text,
        created_at -> BigInt,
    }
}

diesel::table! {
    sessions (seq) {
        seq -> BigInt,
        id -> Text,
        developer_id -> Text,
        agent_id -> Text,
        transport -> Text,
        call_sid -> Nullable<Text>,
        from_number -> Nullable<Text>,
        to_number -> Nullable<Text>,
        instance_id -> Nullable<Text>,
        status -> Text,
        turn_count -> Integer,
        tool_executions -> Integer,
        total_duration_ms -> BigInt,
        avg_turn_latency_ms -> BigInt,
        end_reason -> Nullable<Text>,
        created_at -> BigInt,
        started_at -> Nullable<BigInt>,
        ended_at -> Nullable<BigInt>,
        node_id -> Nullable<Text>,
    }
}

diesel::table! {
    session_turns (seq) {
        seq -> BigInt,
        session_id -> Text,
        turn_index -> Integer,
        speaker -> Text,
        text -> Text,
        start_ms -> BigInt,
        end_ms -> BigInt,
        stt_ms -> BigInt,
        llm_ms -> BigInt,
        tts_ms -> BigInt,
        latency_ms -> Nullable<BigInt>,
        interrupted -> Bool,
        error -> Nullable<Text>,
        endpoint -> Nullable<Text>,
        endpoint_ms -> Nullable<BigInt>,
        tool_ms -> Nullable<BigInt>,
        platform_ms -> Nullable<BigInt>,
        stt_provider -> Nullable<Text>,
        llm_provider -> Nullable<Text>,
        tts_provider -> Nullable<Text>,
        barge_in_detection_ms -> Nullable<BigInt>,
        barge_in_stop_ms -> Nullable<BigInt>,
        bleed_through -> Nullable<Text>,
        barge_in_requested -> Nullable<Bool>,
    }
}

diesel::table! {
    session_tool_calls (seq) {
        seq -> BigInt,
        session_id -> Text,
        turn_index -> Integer,
        call_id -> Text,
        name -> Text,
        arguments -> Text,
        output -> Text,
        is_error -> Bool,
        duration_ms -> BigInt,
    }
}

diesel::table! {
    session_events (seq) {
        seq -> BigInt,
        session_id -> Text,
        kind -> Text,
        turn_index -> Nullable<Integer>,
        start_ms -> BigInt,
        end_ms -> BigInt,
        detail -> Nullable<Text>,
    }
}

diesel::table! {
    phone_numbers (seq) {
        seq -> BigInt,
        id -> Text,
        developer_id -> Text,
        phone_number -> Text,
        agent_id -> Text,
        instance_id -> Nullable<Text>,
        name -> Nullable<Text>,
        created_at -> BigInt,
        updated_at -> BigInt,
        verified_at -> Nullable<BigInt>,
        code_hash -> Nullable<Text>,
        code_expires_at -> Nullable<BigInt>,
        code_attempts -> Integer,
    }
}

diesel::table! {
    call_tasks (seq) {
        seq -> BigInt,
        id -> Text,
        developer_id -> Text,
        agent_id -> Text,
        instance_id -> Nullable<Text>,
        to_number -> Text,
        from_number -> Text,
        status -> Text,
        call_sid -> Nullable<Text>,
        session_id -> Nullable<Text>,
        record -> Bool,
        last_sequence -> BigInt,
        duration_seconds -> Nullable<BigInt>,
        error -> Nullable<Text>,
        created_at -> BigInt,
        updated_at -> BigInt,
        key_id -> Nullable<Text>,
        machine_detection -> Text,
        voicemail_message -> Nullable<Text>,
        answered_by -> Nullable<Text>,
        machine_action -> Nullable<Text>,
        variables -> Nullable<Text>,
    }
}

diesel::table! {
    campaigns (seq) {
        seq -> BigInt,
        id -> Text,
        developer_id -> Text,
        agent_id -> Text,
        name -> Nullable<Text>,
        from_number -> Text,
        status -> Text,
        status_reason -> Nullable<Text>,
        max_concurrent -> Integer,
        call_window -> Nullable<Text>,
        max_attempts -> Integer,
        retry_delay_ms -> BigInt,
        retry_on -> Text,
        machine_detection -> Text,
        voicemail_message -> Nullable<Text>,
        record -> Bool,
        key_id -> Nullable<Text>,
        public_base -> Text,
        runner_node -> Nullable<Text>,
        lease_until -> BigInt,
        created_at -> BigInt,
        updated_at -> BigInt,
        completed_at -> Nullable<BigInt>,
    }
}

diesel::table! {
    campaign_contacts (seq) {
        seq -> BigInt,
        campaign_id -> Text,
        contact_index -> Integer,
        to_number -> Text,
        variables -> Text,
        status -> Text,
        attempts -> Integer,
        next_attempt_at -> BigInt,
        task_id -> Nullable<Text>,
        last_outcome -> Nullable<Text>,
        error -> Nullable<Text>,
        updated_at -> BigInt,
    }
}

diesel::table! {
    recordings (seq) {
        seq -> BigInt,
        id -> Text,
        developer_id -> Text,
        session_id -> Text,
        call_sid -> Nullable<Text>,
        sample_rate -> Integer,
        status -> Text,
        storage -> Text,
        location -> Text,
        bytes -> BigInt,
        duration_ms -> BigInt,
        created_at -> BigInt,
        completed_at -> Nullable<BigInt>,
        node_id -> Nullable<Text>,
    }
}

diesel::table! {
    agent_syncs (developer_id, agent_id, provider) {
        developer_id -> Text,
        agent_id -> Text,
        provider -> Text,
        external_agent_id -> Text,
        synced_at -> BigInt,
    }
}

diesel::table! {
    portal_codes (seq) {
        seq -> BigInt,
        phone -> Text,
        code_hash -> Text,
        client_ip -> Text,
        attempts -> Integer,
        created_at -> BigInt,
        expires_at -> BigInt,
        consumed_at -> Nullable<BigInt>,
        challenge_hash -> Text,
        trusted -> Bool,
    }
}

diesel::table! {
    developer_phones (phone) {
        phone -> Text,
        developer_id -> Text,
        created_at -> BigInt,
    }
}

diesel::table! {
    portal_sessions (id_hash) {
        id_hash -> Text,
        developer_id -> Text,
        phone -> Text,
        created_at -> BigInt,
        last_seen_at -> BigInt,
        expires_at -> BigInt,
        revoked_at -> Nullable<BigInt>,
    }
}

diesel::table! {
    webhook_endpoints (seq) {
        seq -> BigInt,
        id -> Text,
        developer_id -> Text,
        url -> Text,
        events -> Text,
        secret -> Text,
        created_at -> BigInt,
    }
}

diesel::table! {
    webhook_deliveries (seq) {
        seq -> BigInt,
        id -> Text,
        endpoint_id -> Text,
        developer_id -> Text,
        event_id -> Text,
        event_type -> Text,
        payload -> Text,
        status -> Text,
        attempts -> Integer,
        next_attempt_at -> BigInt,
        created_at -> BigInt,
        completed_at -> Nullable<BigInt>,
    }
}

diesel::table! {
    webhook_attempts (seq) {
        seq -> BigInt,
        delivery_id -> Text,
        attempt -> Integer,
        attempted_at -> BigInt,
        duration_ms -> BigInt,
        status_code -> Nullable<Integer>,
        error -> Nullable<Text>,
    }
}
