import { type FormEvent, useState } from 'react';
import type { ActionName } from '../api.js';

export interface SteerFormsProps {
  /** The names the operator can write to. */
  recipients: string[];
  /** Ids of the tasks a new task may wait for. */
  taskIds: string[];
  busy: boolean;
  /** `CODE: message` of the last action, '' when it succeeded. */
  actionError: string;
  act: (action: ActionName, body: object) => Promise<boolean>;
}

/** Steering the team: a message to a member, a new task. */
export function SteerForms({ recipients, taskIds, busy, actionError, act }: SteerFormsProps) {
  const [to, setTo] = useState('');
  const [text, setText] = useState('');
  const [subject, setSubject] = useState('');
  const [description, setDescription] = useState('');
  const [blockedBy, setBlockedBy] = useState('');

  // A recipient that left the list falls back to the first one.
  const target = recipients.includes(to) ? to : (recipients[0] ?? '');

  const sendMessage = async (event: FormEvent) => {
    event.preventDefault();
    if (await act('message', { to: target, text })) setText('');
  };

  const createTask = async (event: FormEvent) => {
    event.preventDefault();
    const blockers = blockedBy
      .split(/[\s,]+/)
      .map((id) => id.trim())
      .filter((id) => id !== '');
    const body =
      blockers.length === 0
        ? { subject, description }
        : { subject, description, blockedBy: blockers };
    if (await act('task', body)) {
      setSubject('');
      setDescription('');
      setBlockedBy('');
    }
  };

  return (
    <section className="panel steer-panel" aria-labelledby="steer-title">
      <h2 id="steer-title">Steer</h2>
      <p
        className={`action-error${actionError === '' ? '' : ' shown'}`}
        data-testid="action-error"
        role="alert"
      >
        {actionError}
      </p>
      <form className="steer-form" onSubmit={sendMessage}>
        <h3>Message a member</h3>
        <label>
          to
          <select
            data-testid="message-to"
            value={target}
            onChange={(event) => setTo(event.target.value)}
          >
            {recipients.map((name) => (
              <option key={name} value={name}>
                {name}
              </option>
            ))}
          </select>
        </label>
        <label>
          text
          <textarea
            data-testid="message-text"
            rows={3}
            value={text}
            placeholder="What should they do? (Ctrl+Enter sends)"
            onChange={(event) => setText(event.target.value)}
            onKeyDown={(event) => {
              if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) {
                event.preventDefault();
                event.currentTarget.form?.requestSubmit();
              }
            }}
          />
        </label>
        <div className="form-actions">
          <button type="submit" data-testid="message-send" disabled={busy}>
            Send
          </button>
        </div>
      </form>
      <form className="steer-form" onSubmit={createTask}>
        <h3>Create a task</h3>
        <label>
          subject
          <input
            type="text"
            data-testid="task-subject"
            value={subject}
            onChange={(event) => setSubject(event.target.value)}
          />
        </label>
        <label>
          description
          <textarea
            data-testid="task-description"
            rows={3}
            value={description}
            onChange={(event) => setDescription(event.target.value)}
          />
        </label>
        <label>
          <span>
            blocked by <span className="hint">(task ids, optional)</span>
          </span>
          <input
            type="text"
            data-testid="task-blocked-by"
            value={blockedBy}
            list="task-ids"
            placeholder={taskIds.length > 0 ? taskIds.slice(0, 2).join(', ') : 'task-1, task-2'}
            onChange={(event) => setBlockedBy(event.target.value)}
          />
          <datalist id="task-ids">
            {taskIds.map((id) => (
              <option key={id} value={id} />
            ))}
          </datalist>
        </label>
        <div className="form-actions">
          <button type="submit" data-testid="task-create" disabled={busy}>
            Create task
          </button>
        </div>
      </form>
    </section>
  );
}
