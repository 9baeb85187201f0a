import '@xyflow/react/dist/style.css';
import './styles.css';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App, NoToken } from './App.js';
import { DashboardStore } from './store.js';

const container = document.getElementById('root');
if (container === null) throw new Error('the page has no #root element');
const root = createRoot(container);
const token = new URLSearchParams(window.location.search).get('token');

if (token === null || token === '') {
  root.render(<NoToken />);
} else {
  const store = new DashboardStore(token);
  root.render(
    <StrictMode>
      <App store={store} />
    </StrictMode>,
  );
  void store.start();
}
