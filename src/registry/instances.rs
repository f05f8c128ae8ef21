//! Agent instances, served by the `AgentRegistry` (an instance belongs to an agent): create,
//! list, read, update, delete, and the lookup by caller phone number that chats and calls use.
//! Every message checks that the agent is the developer's and live.

use actix::prelude::*;

use super::agents::AgentRegistry;
use super::{cursor_position, Page, PageRequest};
use crate::error::ApiError;
use crate::ids::{AgentId, DeveloperId, InstanceId};
use crate::store::instances::{self, InstanceChanges, InstanceRow};
use crate::store::{agents, Db, StoreError};

async fn check_agent(db: &Db, developer: &DeveloperId, agent: &AgentId) -> Result<(), ApiError> {
    match agents::get(db, developer, agent).await? {
        Some(_) => Ok(()),
        None => Err(ApiError::not_found("agent", agent.as_str())),
    }
}

fn instance_not_found(id: &InstanceId) -> ApiError {
    ApiError::not_found("instance", id.as_str())
}

fn phone_conflict(err: StoreError, phone: Option<&str>) -> ApiError {
    match err {
        StoreError::Conflict(_) => match phone {
            Some(phone) => ApiError::Conflict(format!(
                "another instance of this agent already has phone number {phone}"
            )),
            None => ApiError::Conflict("an instance with this id already exists".into()),
        },
        other => other.into(),
    }
}

#[derive(Message)]
#[rtype(result = "Result<InstanceRow, ApiError>")]
pub struct CreateInstance {
    pub instance: InstanceRow,
}

impl Handler<CreateInstance> for AgentRegistry {
    type Result = ResponseFuture<Result<InstanceRow, ApiError>>;

    fn handle(&mut self, msg: CreateInstance, _: &mut Context<Self>) -> Self::Result {
        let db = self.db();
        Box::pin(async move {
            let row = msg.instance;
            check_agent(&db, &row.developer_id, &row.agent_id).await?;
            instances::insert(&db, &row)
                .await
                .map_err(|e| phone_conflict(e, row.phone_number.as_deref()))
        })
    }
}

/// One instance, by id or by phone number.
#[derive(Message)]
#[rtype(result = "Result<InstanceRow, ApiError>")]
pub struct GetInstance {
    pub developer_id: DeveloperId,
    pub agent_id: AgentId,
    pub lookup: InstanceLookup,
}

#[derive(Debug, Clone)]
pub enum InstanceLookup {
    Id(InstanceId),
    Phone(String),
}

impl Handler<GetInstance> for AgentRegistry {
    type Result = ResponseFuture<Result<InstanceRow, ApiError>>;

    fn handle(&mut self, msg: GetInstance, _: &mut Context<Self>) -> Self::Result {
        let db = self.db();
        Box::pin(async move {
            check_agent(&db, &msg.developer_id, &msg.agent_id).await?;
            let (dev, agent) = (&msg.developer_id, &msg.agent_id);
            match &msg.lookup {
                InstanceLookup::Id(id) => instances::get(&db, dev, agent, id)
                    .await?
                    .ok_or_else(|| instance_not_found(id)),
                InstanceLookup::Phone(phone) => instances::by_phone(&db, dev, agent, phone)
                    .await?
                    .ok_or_else(|| ApiError::not_found("instance with phone number", phone)),
            }
        })
    }
}

#[derive(Message)]
#[rtype(result = "Result<Page<InstanceRow>, ApiError>")]
pub struct ListInstances {
    pub developer_id: DeveloperId,
    pub agent_id: AgentId,
    pub page: PageRequest,
}

impl Handler<ListInstances> for AgentRegistry {
    type Result = ResponseFuture<Result<Page<InstanceRow>, ApiError>>;

    fn handle(&mut self, msg: ListInstances, _: &mut Context<Self>) -> Self::Result {
        let db = self.db();
        Box::pin(async move {
            let (dev, agent) = (&msg.developer_id, &msg.agent_id);
            check_agent(&db, dev, agent).await?;
            let cursor = msg.page.cursor.as_deref();
            let after = cursor_position(cursor, async |id: InstanceId| {
                instances::seq_of(&db, dev, agent, &id).await
            })
            .await?;
            let rows = instances::list(&db, dev, agent, after, msg.page.limit + 1).await?;
            Ok(Page::from_rows(rows, msg.page.limit, |row| row.id.as_str()))
        })
    }
}

#[derive(Message)]
#[rtype(result = "Result<InstanceRow, ApiError>")]
pub struct UpdateInstance {
    pub developer_id: DeveloperId,
    pub agent_id: AgentId,
    pub instance_id: InstanceId,
    pub changes: InstanceChanges,
}

impl Handler<UpdateInstance> for AgentRegistry {
    type Result = ResponseFuture<Result<InstanceRow, ApiError>>;

    fn handle(&mut self, msg: UpdateInstance, _: &mut Context<Self>) -> Self::Result {
        let db = self.db();
        Box::pin(async move {
            let (dev, agent, id) = (&msg.developer_id, &msg.agent_id, &msg.instance_id);
            check_agent(&db, dev, agent).await?;
            let phone = msg.changes.phone_number.clone().flatten();
            instances::update(&db, dev, agent, id, &msg.changes)
                .await
                .map_err(|e| phone_conflict(e, phone.as_deref()))?
                .ok_or_else(|| instance_not_found(id))
        })
    }
}

#[derive(Message)]
#[rtype(result = "Result<(), ApiError>")]
pub struct DeleteInstance {
    pub developer_id: DeveloperId,
    pub agent_id: AgentId,
    pub instance_id: InstanceId,
}

impl Handler<DeleteInstance> for AgentRegistry {
    type Result = ResponseFuture<Result<(), ApiError>>;

    fn handle(&mut self, msg: DeleteInstance, _: &mut Context<Self>) -> Self::Result {
        let db = self.db();
        Box::pin(async move {
            let (dev, agent, id) = (&msg.developer_id, &msg.agent_id, &msg.instance_id);
            check_agent(&db, dev, agent).await?;
            if instances::delete(&db, dev, agent, id).await? {
                Ok(())
            } else {
                Err(instance_not_found(id))
            }
        })
    }
}
